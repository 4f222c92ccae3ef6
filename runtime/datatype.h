/*
 * THROW-AWAY SHIM (branch p2p): the datatype interface agreed with the
 * datatype engine, implemented for predefined contiguous types only so the
 * progress engine builds before branch `dt` lands.  Replaced by dt's
 * runtime/datatype.h at the merge; progress/dt_shim.c is deleted then.
 */
#ifndef CDN_DATATYPE_H
#define CDN_DATATYPE_H

#include <mpi.h>
#include <stdbool.h>

struct cdn_datatype {
    MPI_Datatype handle;
    MPI_Count size;
};

struct cdn_dt_segment {
    const void *buf;
    MPI_Count count;
    struct cdn_datatype *dt;
};

struct cdn_datatype *cdn_datatype_get(MPI_Datatype handle);
int cdn_datatype_check(MPI_Datatype handle, const char *caller, struct cdn_datatype **out);
MPI_Count cdn_datatype_size(const struct cdn_datatype *dt);
MPI_Aint cdn_datatype_extent(const struct cdn_datatype *dt);
MPI_Aint cdn_datatype_lb(const struct cdn_datatype *dt);
MPI_Aint cdn_datatype_true_lb(const struct cdn_datatype *dt);
bool cdn_datatype_is_contig(const struct cdn_datatype *dt, MPI_Count count);
void cdn_datatype_retain(struct cdn_datatype *dt);
void cdn_datatype_release(struct cdn_datatype *dt);
MPI_Count cdn_datatype_elements(const struct cdn_datatype *dt, MPI_Count bytes);
void cdn_dt_segment_init(struct cdn_dt_segment *seg, const void *buf, MPI_Count count,
                         struct cdn_datatype *dt);
MPI_Count cdn_dt_segment_bytes(const struct cdn_dt_segment *seg);
MPI_Count cdn_dt_pack(struct cdn_dt_segment *seg, MPI_Count offset, void *dst, MPI_Count len);
MPI_Count cdn_dt_unpack(struct cdn_dt_segment *seg, MPI_Count offset, const void *src,
                        MPI_Count len);

#endif
