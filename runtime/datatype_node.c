/*
 * Layout nodes of the datatype engine (see datatype_impl.h): creation with
 * normalisation, sharing and release.
 *
 * Normalisation happens as nodes are made, so every constructor gets it:
 * a vector of a contiguous leaf becomes a longer leaf, a vector of a vector
 * whose rows abut becomes one vector, empty blocks disappear, abutting
 * contiguous blocks merge, and a block list with constant spacing becomes a
 * vector.  The result is the fewest nodes that pack in typemap order, and
 * its leaves are the contiguous segments MPIX_Type_iov reports.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/datatype_impl.h"

/* One byte: the child of a merged contiguous run (a block of blen bytes). */
static struct cdn_dt_node byte_leaf = {
    .refs = 1, .kind = CDN_DT_LEAF, .depth = 0, .off = 0, .size = 1, .nsegs = 1,
};

static struct cdn_dt_node *node_alloc(int kind, MPI_Count nblocks)
{
    struct cdn_dt_node *n = calloc(1, sizeof *n + (size_t)nblocks * sizeof(struct cdn_dt_block));
    if (n == NULL)
        return NULL;
    atomic_init(&n->refs, 1);
    n->kind = kind;
    return n;
}

struct cdn_dt_node *cdn_dt_node_retain(struct cdn_dt_node *n)
{
    if (n != NULL && n != &byte_leaf)
        atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
    return n;
}

void cdn_dt_node_release(struct cdn_dt_node *n)
{
    if (n == NULL || n == &byte_leaf)
        return;
    if (atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (n->kind == CDN_DT_VEC)
        cdn_dt_node_release(n->child);
    else if (n->kind == CDN_DT_BLOCKS)
        for (MPI_Count i = 0; i < n->count; i++)
            cdn_dt_node_release(n->blocks[i].child);
    free(n);
}

struct cdn_dt_node *cdn_dt_leaf(MPI_Aint off, MPI_Count size)
{
    if (size <= 0)
        return NULL;
    struct cdn_dt_node *n = node_alloc(CDN_DT_LEAF, 0);
    if (n == NULL)
        return NULL;
    n->off = off;
    n->size = size;
    n->nsegs = 1;
    return n;
}

/* A copy of n moved by d bytes (children shared). */
static struct cdn_dt_node *shifted(struct cdn_dt_node *n, MPI_Aint d)
{
    if (d == 0)
        return cdn_dt_node_retain(n);
    MPI_Count nb = n->kind == CDN_DT_BLOCKS ? n->count : 0;
    struct cdn_dt_node *s = node_alloc(n->kind, nb);
    if (s == NULL)
        return NULL;
    memcpy((char *)s + sizeof s->refs, (char *)n + sizeof n->refs,
           sizeof *n - sizeof n->refs + (size_t)nb * sizeof(struct cdn_dt_block));
    s->off += d;
    if (s->kind == CDN_DT_VEC)
        cdn_dt_node_retain(s->child);
    for (MPI_Count i = 0; i < nb; i++)
        cdn_dt_node_retain(s->blocks[i].child);
    return s;
}

struct cdn_dt_node *cdn_dt_vec(MPI_Aint off, MPI_Count count, MPI_Aint stride, struct cdn_dt_node *child)
{
    if (child == NULL || count <= 0) {
        cdn_dt_node_release(child);
        return NULL;
    }
    struct cdn_dt_node *n;
    if (count == 1) {
        n = shifted(child, off);
    } else if (child->kind == CDN_DT_LEAF && stride == child->size) {
        n = cdn_dt_leaf(off + child->off, count * child->size);
    } else if (child->kind == CDN_DT_VEC && stride == child->count * child->stride) {
        n = cdn_dt_vec(off + child->off, count * child->count, child->stride,
                       cdn_dt_node_retain(child->child));
    } else {
        n = node_alloc(CDN_DT_VEC, 0);
        if (n == NULL)
            goto out;
        n->off = off;
        n->count = count;
        n->stride = stride;
        n->child = cdn_dt_node_retain(child);
        n->size = count * child->size;
        n->nsegs = count * child->nsegs;
        n->depth = child->depth + 1;
    }
out:
    cdn_dt_node_release(child);
    return n;
}

static bool block_is_run(const struct cdn_dt_block *b)
{
    return b->child->kind == CDN_DT_LEAF && (b->blen == 1 || b->stride == b->child->size);
}

/* Blocks with the same shape at constant spacing: a vector of one block. */
static struct cdn_dt_node *as_vector(MPI_Aint off, MPI_Count n, struct cdn_dt_block *b)
{
    MPI_Aint step = b[1].disp - b[0].disp;
    for (MPI_Count i = 1; i < n; i++)
        if (b[i].child != b[0].child || b[i].blen != b[0].blen || b[i].stride != b[0].stride ||
            b[i].disp - b[i - 1].disp != step)
            return NULL;
    struct cdn_dt_node *one = cdn_dt_vec(0, b[0].blen, b[0].stride, cdn_dt_node_retain(b[0].child));
    return cdn_dt_vec(off + b[0].disp, n, step, one);
}

struct cdn_dt_node *cdn_dt_blocks(MPI_Aint off, MPI_Count n, struct cdn_dt_block *in)
{
    struct cdn_dt_block *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    struct cdn_dt_node *node = NULL;
    MPI_Count m = 0;
    if (b == NULL)
        goto out;
    for (MPI_Count i = 0; i < n; i++) {
        struct cdn_dt_block x = in[i];
        if (x.child == NULL || x.blen <= 0)
            continue;
        if (block_is_run(&x)) {  /* one run of bytes: merge with an abutting one */
            MPI_Aint start = x.disp + x.child->off;
            MPI_Count len = x.blen * x.child->size;
            if (m > 0 && b[m - 1].child == &byte_leaf && b[m - 1].disp + b[m - 1].blen == start) {
                b[m - 1].blen += len;
                continue;
            }
            x = (struct cdn_dt_block){.disp = start, .blen = len, .stride = 1, .child = &byte_leaf};
        }
        b[m++] = x;
    }
    if (m == 0)
        goto out;
    if (m == 1) {
        node = cdn_dt_vec(off + b[0].disp, b[0].blen, b[0].stride, cdn_dt_node_retain(b[0].child));
        goto out;
    }
    node = as_vector(off, m, b);
    if (node != NULL)
        goto out;
    node = node_alloc(CDN_DT_BLOCKS, m);
    if (node == NULL)
        goto out;
    node->off = off;
    node->count = m;
    for (MPI_Count i = 0; i < m; i++) {
        struct cdn_dt_block *x = &node->blocks[i];
        *x = b[i];
        cdn_dt_node_retain(x->child);
        x->psize = node->size;
        x->pseg = node->nsegs;
        node->size += x->blen * x->child->size;
        node->nsegs += block_is_run(x) ? 1 : x->blen * x->child->nsegs;
        if (x->child->depth + 1 > node->depth)
            node->depth = x->child->depth + 1;
    }
out:
    for (MPI_Count i = 0; i < n; i++)
        cdn_dt_node_release(in[i].child);
    free(b);
    return node;
}

MPI_Count cdn_dt_node_count(const struct cdn_dt_node *n)
{
    if (n == NULL)
        return 0;
    if (n->kind == CDN_DT_VEC)
        return 1 + cdn_dt_node_count(n->child);
    MPI_Count c = 1;
    if (n->kind == CDN_DT_BLOCKS)
        for (MPI_Count i = 0; i < n->count; i++)
            c += n->blocks[i].child == &byte_leaf ? 0 : cdn_dt_node_count(n->blocks[i].child);
    return c;
}
