/*
 * Info objects: an ordered list of (key, value) strings.  The user's info
 * objects live under handles; communicators and sessions keep private
 * copies.  MPI_INFO_ENV is a static object filled on first use.
 */
#ifndef CDN_INFO_H
#define CDN_INFO_H

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>

struct cdn_info_entry {
    char *key, *value;
};

struct cdn_info {
    MPI_Info handle;               /* 0: a private copy */
    pthread_mutex_t lock;
    int n, cap;
    struct cdn_info_entry *e;
};

struct cdn_info *cdn_info_new(void);
/* A private copy of src (NULL: an empty info); NULL when out of memory. */
struct cdn_info *cdn_info_dup(struct cdn_info *src);
void cdn_info_destroy(struct cdn_info *info);
/* Set key to value (replacing); MPI_SUCCESS or MPI_ERR_NO_MEM. */
int cdn_info_set(struct cdn_info *info, const char *key, const char *value);
/* Every key of src set on dst; MPI_SUCCESS or MPI_ERR_NO_MEM. */
int cdn_info_merge(struct cdn_info *dst, struct cdn_info *src);
/* Copy key's value (at most valuelen-1 bytes + NUL); false if unset.  With
 * len, *len gets the value's full length. */
bool cdn_info_lookup(struct cdn_info *info, const char *key, char *value, int valuelen, int *len);
/* The info behind a handle (MPI_INFO_ENV included), or NULL. */
struct cdn_info *cdn_info_get(MPI_Info handle);
/* For a function's info argument: MPI_INFO_NULL gives NULL with rc
 * MPI_SUCCESS; an invalid handle sets *rc to an MPI_ERR_INFO error. */
struct cdn_info *cdn_info_arg(MPI_Info handle, const char *caller, int *rc);
/* Give info a user handle. */
int cdn_info_publish(struct cdn_info *info, MPI_Info *handle, const char *caller);
/* MPI_*_get_info: a user handle on a copy of src (NULL: empty), read
 * under the owner's lock. */
int cdn_info_publish_copy(struct cdn_info *src, pthread_mutex_t *lock, MPI_Info *handle,
                          const char *caller);
/* MPI_Info_free. */
void cdn_info_unpublish(struct cdn_info *info);
void cdn_info_finalize(void);

#endif
