/* The API table as data (generated into cdn_api_list.c), for mpiinfo. */
#ifndef CDN_API_LIST_H
#define CDN_API_LIST_H

enum {
    CDN_API_IMPLEMENTED = 1 << 0,
    CDN_API_DEPRECATED = 1 << 1,
    CDN_API_EXTENSION = 1 << 2,
    CDN_API_SINCE_4_1 = 1 << 3,
    CDN_API_REMOVED = 1 << 4,   /* removed in MPI-3.0, kept as MPICH keeps it */
};

struct cdn_api_fn {
    const char *name;
    const char *chapter;
    int flags;
};

extern const struct cdn_api_fn cdn_api_table[];
extern const int cdn_api_table_len;

#endif
