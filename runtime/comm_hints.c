/*
 * Communicator hints (MPI-4.1 7.4.4): which info keys a communicator keeps
 * and what MPI_Comm_get_info reports.
 *
 * Hints are never carried from one communicator to another (MPI-4.0 and
 * later: not by MPI_Comm_dup / MPI_Comm_idup either, as MPICH 4 does); a
 * communicator gets only those passed to its own creating call
 * (dup_with_info, idup_with_info, split_type, create_from_group) and to
 * MPI_Comm_set_info.  Of those, Cadence keeps what it understands -- the
 * four point-to-point assertions with a boolean value, and its own
 * cadence_ keys (cadence_<coll>_algorithm, read by coll/) -- and ignores
 * the rest, so MPI_Comm_get_info tells the hints in effect: the
 * assertions always (default false, MPICH's set), then every other hint
 * kept or set by Cadence itself (mpi_hw_resource_type of split_type).
 */
#include "runtime/comm.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/error.h"
#include "runtime/info.h"
#include "runtime/runtime.h"
#include "runtime/stream.h"

static const char *const assertions[] = {"mpi_assert_no_any_tag", "mpi_assert_no_any_source",
                                         "mpi_assert_exact_length",
                                         "mpi_assert_allow_overtaking"};
#define NASSERT (sizeof assertions / sizeof assertions[0])

static bool is_assertion(const char *key)
{
    for (size_t i = 0; i < NASSERT; i++)
        if (strcmp(key, assertions[i]) == 0)
            return true;
    return false;
}

static atomic_bool cadence_hints;

bool cdn_comm_cadence_hints(void)
{
    /* acquire: pairs with the store below, so a hint set before this call
     * (in the user's order) is found by the lookup that follows */
    return atomic_load_explicit(&cadence_hints, memory_order_acquire);
}

/* The value Cadence keeps for key=value, or NULL when it ignores it. */
static const char *kept_value(const char *key, const char *value)
{
    if (is_assertion(key)) {
        if (strcasecmp(value, "true") == 0)
            return "true";
        if (strcasecmp(value, "false") == 0)
            return "false";
        return NULL;  /* not a boolean: ignored, as MPICH */
    }
    if (strncmp(key, "cadence_", 8) != 0)
        return NULL;
    atomic_store_explicit(&cadence_hints, true, memory_order_release);
    return value;
}

int cdn_comm_hints_take(struct cdn_info **dst, struct cdn_info *in, const char *caller)
{
    if (in == NULL)
        return MPI_SUCCESS;
    struct cdn_info *src = cdn_info_dup(in);  /* a stable snapshot of the user's object */
    int rc = src == NULL ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && *dst == NULL && (*dst = cdn_info_new()) == NULL)
        rc = MPI_ERR_NO_MEM;
    for (int i = 0; rc == MPI_SUCCESS && i < src->n; i++) {
        const char *v = kept_value(src->e[i].key, src->e[i].value);
        if (v != NULL)
            rc = cdn_info_set(*dst, src->e[i].key, v);
    }
    cdn_info_destroy(src);
    return rc == MPI_SUCCESS ? rc : cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
}

int cdn_comm_hints_report(struct cdn_comm *c, MPI_Info *info_used, const char *caller)
{
    if (info_used == NULL)
        return cdn_err(MPI_ERR_ARG, "%s: info_used is NULL", caller);
    struct cdn_info *out = cdn_info_new();
    int rc = out == NULL ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; rc == MPI_SUCCESS && i < NASSERT; i++) {
        char v[8];
        if (!cdn_info_lookup(c->info, assertions[i], v, (int)sizeof v, NULL))
            strcpy(v, "false");
        rc = cdn_info_set(out, assertions[i], v);
    }
    if (rc == MPI_SUCCESS && c->info != NULL)
        rc = cdn_info_merge(out, c->info);  /* the assertions again: same values, same places */
    pthread_mutex_unlock(&c->lock);
    if (rc != MPI_SUCCESS) {
        cdn_info_destroy(out);
        return cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
    }
    return cdn_info_publish(out, info_used, caller);
}

int cdn_comm_take_pctx(struct cdn_comm *c, const char *caller)
{
    char v[MPI_MAX_INFO_VAL];
    if (!cdn_comm_cadence_hints() ||
        !cdn_comm_info_value(c, "cadence_progress_context", v, (int)sizeof v))
        return MPI_SUCCESS;
    int n = cdn_rt.pctx_count, k = -1;
    if (strcmp(v, "auto") == 0) {
        /* the contexts other than 0 in turn, but those streams own (0 when
         * there is no other) */
        static atomic_uint next;
        k = 0;
        for (int tries = 0; n > 1 && tries < n - 1 && k == 0; tries++) {
            int c1 = 1 + (int)(atomic_fetch_add(&next, 1) % (unsigned)(n - 1));
            if (!cdn_stream_owns(c1))  /* a stream's context is its own */
                k = c1;
        }
    } else {
        char *end;
        long x = strtol(v, &end, 10);
        if (end != v && *end == '\0' && x >= 0 && x < n)
            k = (int)x;
    }
    if (k < 0)
        return cdn_err(MPI_ERR_INFO_VALUE, "%s: cadence_progress_context=%s names no progress "
                       "context: give \"auto\" or 0 to %d (CADENCE_PROGRESS_CONTEXTS=%d)", caller,
                       v, n - 1, n);
    c->pctx = k;
    return MPI_SUCCESS;
}
