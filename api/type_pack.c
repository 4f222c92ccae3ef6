/*
 * Bindings of MPI_Pack / MPI_Unpack / MPI_Pack_size, their "external32"
 * forms (MPI-4.1 5.2), and the MPIX_Type_iov extension (seed 003, "Derived
 * Datatypes").
 *
 * Native packing is the engine's segment copy straight into the user's
 * buffer.  external32 packs natively into a scratch buffer and converts the
 * stream element by element (big-endian, external32 sizes); unpacking does
 * the reverse.  MPIX_Type_iov reports segments of one element relative to
 * address 0, as MPICH does (add them to a buffer address to use them).
 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "api/datatype_args.h"
#include "api/entry.h"
#include "cdn_api_impl.h"

_Static_assert(sizeof(MPIX_Iov) == sizeof(struct iovec) &&
                   offsetof(MPIX_Iov, iov_base) == offsetof(struct iovec, iov_base) &&
                   offsetof(MPIX_Iov, iov_len) == offsetof(struct iovec, iov_len),
               "MPIX_Iov is layout-compatible with struct iovec");

static int pack_args(MPI_Count count, MPI_Datatype datatype, const void *position, const char *caller,
                     struct cdn_datatype **dt)
{
    int rc = cdn_dt_count_arg(count, "count", caller);
    if (rc == MPI_SUCCESS)
        rc = cdn_datatype_check(datatype, caller, dt);
    if (rc == MPI_SUCCESS && position == NULL)
        rc = cdn_err(MPI_ERR_ARG, "%s: position is NULL", caller);
    return rc;
}

static int comm_arg(MPI_Comm comm, const char *caller)
{
    int rc = MPI_SUCCESS;
    cdn_api_comm(comm, caller, &rc);
    return rc;
}

/* Pack count elements at *position of an outsize-byte buffer. */
static int pack(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf, MPI_Count outsize,
                MPI_Count *position, const char *caller)
{
    struct cdn_datatype *dt;
    int rc = pack_args(incount, datatype, position, caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count need = incount * dt->size;
    if (*position < 0 || *position > outsize || need > outsize - *position)
        return cdn_err(MPI_ERR_TRUNCATE, "%s: %lld bytes do not fit at position %lld of a buffer of "
                       "outsize %lld", caller, (long long)need, (long long)*position, (long long)outsize);
    struct cdn_dt_segment seg;
    cdn_dt_segment_init(&seg, inbuf, incount, dt);
    *position += cdn_dt_pack(&seg, 0, (char *)outbuf + *position, need);
    cdn_dt_segment_fini(&seg);
    return MPI_SUCCESS;
}

static int unpack(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf, MPI_Count outcount,
                  MPI_Datatype datatype, const char *caller)
{
    struct cdn_datatype *dt;
    int rc = pack_args(outcount, datatype, position, caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count need = outcount * dt->size;
    if (*position < 0 || *position > insize || need > insize - *position)
        return cdn_err(MPI_ERR_TRUNCATE, "%s: %lld bytes to unpack but only %lld remain after position %lld "
                       "of insize %lld", caller, (long long)need, (long long)(insize - *position),
                       (long long)*position, (long long)insize);
    struct cdn_dt_segment seg;
    cdn_dt_segment_init(&seg, outbuf, outcount, dt);
    *position += cdn_dt_unpack(&seg, 0, (const char *)inbuf + *position, need);
    cdn_dt_segment_fini(&seg);
    return MPI_SUCCESS;
}

int cdn_MPI_Pack_c(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf, MPI_Count outsize,
                   MPI_Count *position, MPI_Comm comm)
{
    int rc = comm_arg(comm, "MPI_Pack_c");
    return rc != MPI_SUCCESS ? rc : pack(inbuf, incount, datatype, outbuf, outsize, position, "MPI_Pack_c");
}

int cdn_MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position,
                 MPI_Comm comm)
{
    int rc = comm_arg(comm, "MPI_Pack");
    if (rc == MPI_SUCCESS && position == NULL)
        rc = cdn_err(MPI_ERR_ARG, "MPI_Pack: position is NULL");
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count pos = *position;
    rc = pack(inbuf, incount, datatype, outbuf, outsize, &pos, "MPI_Pack");
    if (rc == MPI_SUCCESS)
        *position = (int)pos;
    return rc;
}

int cdn_MPI_Unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf, MPI_Count outcount,
                     MPI_Datatype datatype, MPI_Comm comm)
{
    int rc = comm_arg(comm, "MPI_Unpack_c");
    return rc != MPI_SUCCESS ? rc : unpack(inbuf, insize, position, outbuf, outcount, datatype, "MPI_Unpack_c");
}

int cdn_MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype,
                   MPI_Comm comm)
{
    int rc = comm_arg(comm, "MPI_Unpack");
    if (rc == MPI_SUCCESS && position == NULL)
        rc = cdn_err(MPI_ERR_ARG, "MPI_Unpack: position is NULL");
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count pos = *position;
    rc = unpack(inbuf, insize, &pos, outbuf, outcount, datatype, "MPI_Unpack");
    if (rc == MPI_SUCCESS)
        *position = (int)pos;
    return rc;
}

/* Bytes of count elements, native or external32. */
static int packed_size(MPI_Count count, MPI_Datatype datatype, const void *out, bool external, MPI_Count *size,
                       const char *caller)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_count_arg(count, "incount", caller);
    if (rc == MPI_SUCCESS)
        rc = cdn_datatype_check(datatype, caller, &dt);
    if (rc == MPI_SUCCESS && out == NULL)
        rc = cdn_err(MPI_ERR_ARG, "%s: size is NULL", caller);
    if (rc == MPI_SUCCESS)
        *size = external ? (dt->units != NULL ? count * dt->units->xsize : 0) : count * dt->size;
    return rc;
}

int cdn_MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    MPI_Count s = 0;
    int rc = comm_arg(comm, "MPI_Pack_size");
    if (rc == MPI_SUCCESS)
        rc = packed_size(incount, datatype, size, false, &s, "MPI_Pack_size");
    if (rc == MPI_SUCCESS && s > INT_MAX)
        rc = cdn_err(MPI_ERR_VALUE_TOO_LARGE, "MPI_Pack_size: %lld bytes do not fit in an int; use "
                     "MPI_Pack_size_c", (long long)s);
    if (rc == MPI_SUCCESS)
        *size = (int)s;
    return rc;
}

int cdn_MPI_Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm, MPI_Count *size)
{
    int rc = comm_arg(comm, "MPI_Pack_size_c");
    return rc != MPI_SUCCESS ? rc : packed_size(incount, datatype, size, false, size, "MPI_Pack_size_c");
}

/* ---- external32 ---- */

static int datarep_arg(const char *datarep, const char *caller)
{
    if (datarep == NULL || strcmp(datarep, "external32") != 0)
        return cdn_err(MPI_ERR_UNSUPPORTED_DATAREP, "%s: datarep \"%s\" is not \"external32\"", caller,
                       datarep == NULL ? "(null)" : datarep);
    return MPI_SUCCESS;
}

int cdn_MPI_Pack_external_size_c(const char *datarep, MPI_Count incount, MPI_Datatype datatype, MPI_Count *size)
{
    int rc = datarep_arg(datarep, "MPI_Pack_external_size_c");
    return rc != MPI_SUCCESS ? rc : packed_size(incount, datatype, size, true, size, "MPI_Pack_external_size_c");
}

int cdn_MPI_Pack_external_size(const char *datarep, int incount, MPI_Datatype datatype, MPI_Aint *size)
{
    int rc = datarep_arg(datarep, "MPI_Pack_external_size");
    return rc != MPI_SUCCESS ? rc : packed_size(incount, datatype, size, true, size, "MPI_Pack_external_size");
}

static int external(bool to_ext, const char *datarep, void *user, MPI_Count count, MPI_Datatype datatype,
                    void *stream, MPI_Count streamsize, MPI_Count *position, const char *caller)
{
    struct cdn_datatype *dt;
    int rc = datarep_arg(datarep, caller);
    if (rc == MPI_SUCCESS)
        rc = pack_args(count, datatype, position, caller, &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count xbytes = dt->units != NULL ? count * dt->units->xsize : 0, nbytes = count * dt->size;
    if (*position < 0 || *position > streamsize || xbytes > streamsize - *position)
        return cdn_err(MPI_ERR_TRUNCATE,
                       "%s: %lld external32 bytes do not fit at position %lld of a buffer of %lld bytes",
                       caller, (long long)xbytes, (long long)*position, (long long)streamsize);
    char *native = malloc((size_t)(nbytes > 0 ? nbytes : 1));
    if (native == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "%s: no memory for %lld bytes of scratch", caller, (long long)nbytes);
    char *ext = (char *)stream + *position;
    struct cdn_dt_segment seg;
    cdn_dt_segment_init(&seg, user, count, dt);
    if (to_ext) {
        cdn_dt_pack(&seg, 0, native, nbytes);
        cdn_du_to_external(dt->units, count, native, ext);
    } else {
        cdn_du_from_external(dt->units, count, ext, native);
        cdn_dt_unpack(&seg, 0, native, nbytes);
    }
    cdn_dt_segment_fini(&seg);
    free(native);
    *position += xbytes;
    return MPI_SUCCESS;
}

int cdn_MPI_Pack_external_c(const char *datarep, const void *inbuf, MPI_Count incount, MPI_Datatype datatype,
                            void *outbuf, MPI_Count outsize, MPI_Count *position)
{
    return external(true, datarep, (void *)inbuf, incount, datatype, outbuf, outsize, position,
                    "MPI_Pack_external_c");
}

int cdn_MPI_Pack_external(const char *datarep, const void *inbuf, int incount, MPI_Datatype datatype,
                          void *outbuf, MPI_Aint outsize, MPI_Aint *position)
{
    return external(true, datarep, (void *)inbuf, incount, datatype, outbuf, outsize, position,
                    "MPI_Pack_external");
}

int cdn_MPI_Unpack_external_c(const char datarep[], const void *inbuf, MPI_Count insize, MPI_Count *position,
                              void *outbuf, MPI_Count outcount, MPI_Datatype datatype)
{
    return external(false, datarep, outbuf, outcount, datatype, (void *)inbuf, insize, position,
                    "MPI_Unpack_external_c");
}

int cdn_MPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize, MPI_Aint *position,
                            void *outbuf, int outcount, MPI_Datatype datatype)
{
    return external(false, datarep, outbuf, outcount, datatype, (void *)inbuf, insize, position,
                    "MPI_Unpack_external");
}

/* ---- MPIX_Type_iov ---- */

int cdn_MPIX_Type_iov_len(MPI_Datatype datatype, MPI_Count max_iov_bytes, MPI_Count *iov_len,
                          MPI_Count *actual_iov_bytes)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_type_arg(datatype, "datatype", "MPIX_Type_iov_len", &dt);
    if (rc == MPI_SUCCESS && (iov_len == NULL || actual_iov_bytes == NULL))
        rc = cdn_err(MPI_ERR_ARG, "MPIX_Type_iov_len: %s is NULL", iov_len == NULL ? "iov_len" : "actual_iov_bytes");
    if (rc == MPI_SUCCESS)
        cdn_dt_iov_len(dt, max_iov_bytes, iov_len, actual_iov_bytes);
    return rc;
}

int cdn_MPIX_Type_iov(MPI_Datatype datatype, MPI_Count iov_offset, MPIX_Iov *iov, MPI_Count max_iov_len,
                      MPI_Count *actual_iov_len)
{
    struct cdn_datatype *dt;
    int rc = cdn_dt_type_arg(datatype, "datatype", "MPIX_Type_iov", &dt);
    if (rc != MPI_SUCCESS)
        return rc;
    if (actual_iov_len == NULL || (iov == NULL && max_iov_len > 0))
        return cdn_err(MPI_ERR_ARG, "MPIX_Type_iov: %s is NULL", iov == NULL ? "iov" : "actual_iov_len");
    if (iov_offset < 0)
        return cdn_err(MPI_ERR_ARG, "MPIX_Type_iov: iov_offset %lld is negative", (long long)iov_offset);
    if (max_iov_len < 0)
        return cdn_err(MPI_ERR_ARG, "MPIX_Type_iov: max_iov_len %lld is negative", (long long)max_iov_len);
    *actual_iov_len = cdn_dt_iov(dt, 0, iov_offset, iov, max_iov_len);
    return MPI_SUCCESS;
}
