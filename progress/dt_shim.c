/*
 * THROW-AWAY SHIM (branch p2p), deleted when branch `dt` is merged: the
 * datatype interface for predefined types whose MPICH handle carries the
 * size in bits 8-15.  Pair types and derived types are refused.
 */
#include <string.h>

#include "runtime/datatype.h"
#include "runtime/error.h"
#include "runtime/handle.h"

#define SHIM_TYPES 256
#include <pthread.h>
static struct cdn_datatype shim[SHIM_TYPES][256];
static pthread_once_t shim_once = PTHREAD_ONCE_INIT;

static void shim_init(void)
{
    for (int s = 1; s < SHIM_TYPES; s++)
        for (int i = 0; i < 256; i++)
            shim[s][i].size = s;
}

struct cdn_datatype *cdn_datatype_get(MPI_Datatype handle)
{
    if (CDN_HANDLE_KIND(handle) != CDN_HK_BUILTIN || CDN_HANDLE_TYPE(handle) != CDN_OBJ_DATATYPE)
        return NULL;
    int size = ((unsigned)handle >> 8) & 0xff;
    if (size == 0 || handle == MPI_LB || handle == MPI_UB)
        return NULL;
    pthread_once(&shim_once, shim_init);
    return &shim[size][handle & 0xff];
}

int cdn_datatype_check(MPI_Datatype handle, const char *caller, struct cdn_datatype **out)
{
    *out = cdn_datatype_get(handle);
    if (*out == NULL)
        return cdn_err(MPI_ERR_TYPE, "%s: datatype 0x%x is not valid%s", caller, (unsigned)handle,
                       handle == MPI_DATATYPE_NULL ? " (MPI_DATATYPE_NULL)" : "");
    return MPI_SUCCESS;
}

MPI_Count cdn_datatype_size(const struct cdn_datatype *dt) { return dt->size; }
MPI_Aint cdn_datatype_extent(const struct cdn_datatype *dt) { return dt->size; }
MPI_Aint cdn_datatype_lb(const struct cdn_datatype *dt) { (void)dt; return 0; }
MPI_Aint cdn_datatype_true_lb(const struct cdn_datatype *dt) { (void)dt; return 0; }
bool cdn_datatype_is_contig(const struct cdn_datatype *dt, MPI_Count count)
{
    (void)dt;
    (void)count;
    return true;
}
void cdn_datatype_retain(struct cdn_datatype *dt) { (void)dt; }
void cdn_datatype_release(struct cdn_datatype *dt) { (void)dt; }

MPI_Count cdn_datatype_elements(const struct cdn_datatype *dt, MPI_Count bytes)
{
    return bytes % dt->size ? MPI_UNDEFINED : bytes / dt->size;
}

void cdn_dt_segment_init(struct cdn_dt_segment *seg, const void *buf, MPI_Count count,
                         struct cdn_datatype *dt)
{
    seg->buf = buf;
    seg->count = count;
    seg->dt = dt;
}

MPI_Count cdn_dt_segment_bytes(const struct cdn_dt_segment *seg)
{
    return seg->count * seg->dt->size;
}

static MPI_Count clamp(const struct cdn_dt_segment *seg, MPI_Count offset, MPI_Count len)
{
    MPI_Count total = cdn_dt_segment_bytes(seg);
    if (offset >= total)
        return 0;
    return len < total - offset ? len : total - offset;
}

MPI_Count cdn_dt_pack(struct cdn_dt_segment *seg, MPI_Count offset, void *dst, MPI_Count len)
{
    len = clamp(seg, offset, len);
    memcpy(dst, (const char *)seg->buf + offset, (size_t)len);
    return len;
}

MPI_Count cdn_dt_unpack(struct cdn_dt_segment *seg, MPI_Count offset, const void *src,
                        MPI_Count len)
{
    len = clamp(seg, offset, len);
    memcpy((char *)seg->buf + offset, src, (size_t)len);
    return len;
}
