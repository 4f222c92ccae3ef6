/*
 * MPI_Type_create_f90_integer / _real / _complex (MPI-4.1 19.1.9): the
 * Fortran type of a requested decimal range r (and precision p), as MPICH
 * answers it from C:
 *
 *   integer   r <= 2: MPI_INTEGER1, <= 4: INTEGER2, <= 9: INTEGER4,
 *             <= 18: INTEGER8
 *   real      p <= 6 and r <= 37: MPI_REAL4; p <= 15 and r <= 307: REAL8
 *   complex   the same bounds: MPI_COMPLEX8, COMPLEX16
 *
 * and MPI_ERR_OTHER beyond them.  MPI_UNDEFINED (negative) leaves a bound
 * free.  The result is a copy of that type decoded as MPI_COMBINER_F90_*
 * with the arguments as given; it is predefined in MPI's sense -- the same
 * arguments give the same handle, and MPI_Type_free refuses it -- so the
 * copies live in a small cache until MPI is finalised.
 */
#include <stdlib.h>

#include "runtime/datatype_impl.h"
#include "runtime/error.h"

struct f90_entry {
    int combiner, p, r;
    struct cdn_datatype *dt;
};

static struct {
    pthread_mutex_t lock;
    struct f90_entry *e;
    int n, cap;
} F = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The basic type for the request, or MPI_DATATYPE_NULL when none fits. */
static MPI_Datatype pick(int combiner, int p, int r)
{
    if (combiner == MPI_COMBINER_F90_INTEGER) {
        static const struct { int r; MPI_Datatype t; } ints[] = {
            {2, MPI_INTEGER1}, {4, MPI_INTEGER2}, {9, MPI_INTEGER4}, {18, MPI_INTEGER8}};
        for (int i = 0; i < 4; i++)
            if (r <= ints[i].r)
                return ints[i].t;
        return MPI_DATATYPE_NULL;
    }
    bool cplx = combiner == MPI_COMBINER_F90_COMPLEX;
    if (p <= 6 && r <= 37)
        return cplx ? MPI_COMPLEX8 : MPI_REAL4;
    if (p <= 15 && r <= 307)
        return cplx ? MPI_COMPLEX16 : MPI_REAL8;
    return MPI_DATATYPE_NULL;
}

/* A predefined copy of basic decoded as combiner(p, r); NULL on error (*rc). */
static struct cdn_datatype *make(int combiner, int p, int r, MPI_Datatype basic, int *rc,
                                 const char *caller)
{
    struct cdn_datatype *old = cdn_datatype_get(basic);
    struct cdn_datatype *dt = old != NULL ? cdn_dt_make_resized(old, old->lb, old->ub - old->lb) : NULL;
    if (dt == NULL) {
        *rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        return NULL;
    }
    dt->committed = true;
    dt->f90 = true;
    bool is_int = combiner == MPI_COMBINER_F90_INTEGER;
    *rc = cdn_datatype_record(dt, combiner, is_int ? 1 : 2, 0, 0, 0, caller);
    if (*rc == MPI_SUCCESS) {
        if (is_int)
            dt->ints[0] = r;
        else
            dt->ints[0] = p, dt->ints[1] = r;
        *rc = cdn_datatype_publish(dt, caller);
    }
    if (*rc != MPI_SUCCESS) {
        cdn_datatype_release(dt);
        return NULL;
    }
    return dt;
}

int cdn_datatype_f90(int combiner, int p, int r, MPI_Datatype *out, const char *caller)
{
    MPI_Datatype basic = pick(combiner, p, r);
    if (basic == MPI_DATATYPE_NULL) {
        if (combiner == MPI_COMBINER_F90_INTEGER)
            return cdn_err(MPI_ERR_OTHER, "%s: no integer type has a decimal range of %d (the "
                           "largest is 18, MPI_INTEGER8)", caller, r);
        return cdn_err(MPI_ERR_OTHER, "%s: no type has precision %d and range %d (the largest "
                       "are 15 and 307, 8-byte reals)", caller, p, r);
    }
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&F.lock);
    struct cdn_datatype *dt = NULL;
    for (int i = 0; i < F.n && dt == NULL; i++)
        if (F.e[i].combiner == combiner && F.e[i].p == p && F.e[i].r == r)
            dt = F.e[i].dt;
    if (dt == NULL && F.n == F.cap) {
        int cap = F.cap ? 2 * F.cap : 8;
        struct f90_entry *e = realloc(F.e, (size_t)cap * sizeof *e);
        if (e == NULL)
            rc = cdn_err(MPI_ERR_NO_MEM, "%s: out of memory", caller);
        else
            F.e = e, F.cap = cap;
    }
    if (dt == NULL && rc == MPI_SUCCESS && (dt = make(combiner, p, r, basic, &rc, caller)) != NULL)
        F.e[F.n++] = (struct f90_entry){combiner, p, r, dt};
    pthread_mutex_unlock(&F.lock);
    if (dt != NULL)
        *out = dt->handle;
    return rc;
}

void cdn_datatype_f90_finalize(void)
{
    pthread_mutex_lock(&F.lock);
    for (int i = 0; i < F.n; i++)
        cdn_datatype_release(F.e[i].dt);
    free(F.e);
    F.e = NULL;
    F.n = F.cap = 0;
    pthread_mutex_unlock(&F.lock);
}
