/*
 * The two shapes every datatype constructor reduces to — a list of pieces
 * (blen copies of a type at a byte displacement: indexed, hindexed,
 * indexed_block, hindexed_block, struct) and a vector (count blocks of blen
 * copies, stride bytes apart: contiguous, vector, hvector) — plus resizing.
 *
 * Each computes the type's size, bounds (lb/ub from the children's lb/ub,
 * true bounds from their true bounds, following the typemap definitions of
 * MPI-4.1 5.1) and builds its layout tree and units from the children's,
 * sharing them.  A struct's extent is padded to the largest alignment of its
 * basic types, as C pads a struct (and as MPICH does); MPI_LB / MPI_UB
 * entries of a struct set its bounds explicitly instead.
 *
 * Argument checking and the decoding record (get_contents) are the
 * bindings' job (api/type_create.c).
 */
#include <stdlib.h>

#include "runtime/datatype_impl.h"

static MPI_Aint min_a(MPI_Aint a, MPI_Aint b) { return a < b ? a : b; }
static MPI_Aint max_a(MPI_Aint a, MPI_Aint b) { return a > b ? a : b; }

/* Bounds of blen copies of t placed extent apart from displacement 0. */
struct bounds {
    MPI_Aint lb, ub, tlb, tub;
};
static struct bounds block_bounds(const struct cdn_datatype *t, MPI_Count blen)
{
    MPI_Aint span = (MPI_Aint)(blen - 1) * (t->ub - t->lb);
    return (struct bounds){
        .lb = min_a(t->lb, t->lb + span), .ub = max_a(t->ub, t->ub + span),
        .tlb = min_a(t->true_lb, t->true_lb + span), .tub = max_a(t->true_ub, t->true_ub + span),
    };
}

struct cdn_datatype *cdn_dt_make_pieces(MPI_Count n, const struct cdn_dt_piece *p, bool is_struct)
{
    struct cdn_datatype *dt = cdn_datatype_new();
    struct cdn_dt_block *blocks = calloc((size_t)(n > 0 ? n : 1), sizeof *blocks);
    struct cdn_dt_units **units = calloc((size_t)(n > 0 ? n : 1), sizeof *units);
    if (dt == NULL || blocks == NULL || units == NULL) {
        free(blocks);
        free(units);
        if (dt != NULL)
            cdn_datatype_release(dt);
        return NULL;
    }
    bool any = false, has_lb = false, has_ub = false;
    MPI_Aint lb_mark = 0, ub_mark = 0;
    dt->align = 1;
    for (MPI_Count i = 0; i < n; i++) {
        const struct cdn_datatype *t = p[i].type;
        if (cdn_datatype_is_marker(t->handle)) {
            if (t->handle == MPI_LB)
                lb_mark = has_lb ? min_a(lb_mark, p[i].disp) : p[i].disp, has_lb = true;
            else
                ub_mark = has_ub ? max_a(ub_mark, p[i].disp) : p[i].disp, has_ub = true;
            continue;
        }
        if (p[i].blen <= 0 || t->size == 0)
            continue;
        struct bounds b = block_bounds(t, p[i].blen);
        b.lb += p[i].disp, b.ub += p[i].disp, b.tlb += p[i].disp, b.tub += p[i].disp;
        if (!any) {
            dt->lb = b.lb, dt->ub = b.ub, dt->true_lb = b.tlb, dt->true_ub = b.tub;
            any = true;
        } else {
            dt->lb = min_a(dt->lb, b.lb), dt->ub = max_a(dt->ub, b.ub);
            dt->true_lb = min_a(dt->true_lb, b.tlb), dt->true_ub = max_a(dt->true_ub, b.tub);
        }
        dt->size += p[i].blen * t->size;
        if (t->align > dt->align)
            dt->align = t->align;
        blocks[i] = (struct cdn_dt_block){.disp = p[i].disp, .blen = p[i].blen,
                                          .stride = t->ub - t->lb, .child = cdn_dt_node_retain(t->root)};
        units[i] = cdn_du_rep(p[i].blen, cdn_du_retain(t->units));
    }
    if (is_struct && !has_lb && !has_ub) {
        MPI_Aint ext = dt->ub - dt->lb, pad = ext % dt->align;
        if (pad != 0)
            dt->ub += dt->align - pad;
    }
    if (has_lb)
        dt->lb = lb_mark;
    if (has_ub)
        dt->ub = ub_mark;
    dt->root = cdn_dt_blocks(0, n, blocks);
    dt->units = cdn_du_seq(n, units);
    free(blocks);
    free(units);
    return dt;
}

struct cdn_datatype *cdn_dt_make_vector(MPI_Count count, MPI_Count blen, MPI_Aint stride,
                                        struct cdn_datatype *old)
{
    struct cdn_datatype *dt = cdn_datatype_new();
    if (dt == NULL)
        return NULL;
    if (count <= 0 || blen <= 0 || old->size == 0)
        return dt;
    dt->align = old->align;
    struct bounds b = block_bounds(old, blen);
    MPI_Aint span = (MPI_Aint)(count - 1) * stride;
    dt->lb = min_a(b.lb, b.lb + span), dt->ub = max_a(b.ub, b.ub + span);
    dt->true_lb = min_a(b.tlb, b.tlb + span), dt->true_ub = max_a(b.tub, b.tub + span);
    dt->size = count * blen * old->size;
    struct cdn_dt_node *block = cdn_dt_vec(0, blen, old->ub - old->lb, cdn_dt_node_retain(old->root));
    dt->root = cdn_dt_vec(0, count, stride, block);
    dt->units = cdn_du_rep(count * blen, cdn_du_retain(old->units));
    return dt;
}

struct cdn_datatype *cdn_dt_make_resized(struct cdn_datatype *old, MPI_Aint lb, MPI_Aint extent)
{
    struct cdn_datatype *dt = cdn_datatype_new();
    if (dt == NULL)
        return NULL;
    dt->align = old->align;
    dt->size = old->size;
    dt->lb = lb;
    dt->ub = lb + extent;
    dt->true_lb = old->true_lb;
    dt->true_ub = old->true_ub;
    dt->root = cdn_dt_node_retain(old->root);
    dt->units = cdn_du_retain(old->units);
    return dt;
}
