/*
 * The packed stream of a datatype as basic elements: runs of one element
 * kind, repeats and sequences (see datatype_impl.h).  It answers two
 * questions the layout tree cannot: how many basic elements a number of
 * packed bytes holds (MPI_Get_elements), and how to convert the packed
 * stream to and from external32 — big-endian, with the sizes of the MPI-4.1
 * external32 table, which differ from x86_64's for MPI_LONG,
 * MPI_UNSIGNED_LONG and MPI_WCHAR.
 *
 * Adjacent runs of the same element kind merge and a repeat of a run is a
 * longer run, so a vector or indexed type of doubles is a single run.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/datatype_impl.h"

static struct cdn_dt_units *units_alloc(int kind, MPI_Count nkids)
{
    struct cdn_dt_units *u = calloc(1, sizeof *u + (size_t)nkids * sizeof(struct cdn_dt_units *));
    if (u != NULL) {
        atomic_init(&u->refs, 1);
        u->kind = kind;
    }
    return u;
}

struct cdn_dt_units *cdn_du_retain(struct cdn_dt_units *u)
{
    if (u != NULL)
        atomic_fetch_add_explicit(&u->refs, 1, memory_order_relaxed);
    return u;
}

void cdn_du_release(struct cdn_dt_units *u)
{
    if (u == NULL || atomic_fetch_sub_explicit(&u->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (u->kind == CDN_DU_REP)
        cdn_du_release(u->child);
    else if (u->kind == CDN_DU_SEQ)
        for (MPI_Count i = 0; i < u->n; i++)
            cdn_du_release(u->kids[i]);
    free(u);
}

struct cdn_dt_units *cdn_du_run(MPI_Count n, int esize, int xesize, int parts, int is_signed)
{
    if (n <= 0 || esize <= 0)
        return NULL;
    struct cdn_dt_units *u = units_alloc(CDN_DU_RUN, 0);
    if (u == NULL)
        return NULL;
    u->n = n;
    u->esize = esize;
    u->xesize = xesize;
    u->parts = parts;
    u->is_signed = is_signed;
    u->size = n * esize;
    u->xsize = n * xesize;
    u->nelems = n;
    return u;
}

static bool same_element(const struct cdn_dt_units *a, const struct cdn_dt_units *b)
{
    return a->kind == CDN_DU_RUN && b->kind == CDN_DU_RUN && a->esize == b->esize &&
           a->xesize == b->xesize && a->parts == b->parts && a->is_signed == b->is_signed;
}

struct cdn_dt_units *cdn_du_rep(MPI_Count n, struct cdn_dt_units *child)
{
    struct cdn_dt_units *u = NULL;
    if (child == NULL || n <= 0)
        goto out;
    if (n == 1)
        return child;
    if (child->kind == CDN_DU_RUN) {
        u = cdn_du_run(n * child->n, child->esize, child->xesize, child->parts, child->is_signed);
        goto out;
    }
    if (child->kind == CDN_DU_REP) {
        u = cdn_du_rep(n * child->n, cdn_du_retain(child->child));
        goto out;
    }
    u = units_alloc(CDN_DU_REP, 0);
    if (u == NULL)
        goto out;
    u->n = n;
    u->child = cdn_du_retain(child);
    u->size = n * child->size;
    u->xsize = n * child->xsize;
    u->nelems = n * child->nelems;
out:
    cdn_du_release(child);
    return u;
}

struct cdn_dt_units *cdn_du_seq(MPI_Count n, struct cdn_dt_units **kids)
{
    MPI_Count cap = 0, m = 0;
    for (MPI_Count i = 0; i < n; i++)
        cap += kids[i] != NULL && kids[i]->kind == CDN_DU_SEQ ? kids[i]->n : 1;
    struct cdn_dt_units *u = units_alloc(CDN_DU_SEQ, cap);
    if (u == NULL)
        goto fail;
    for (MPI_Count i = 0; i < n; i++) {
        struct cdn_dt_units *k = kids[i];
        if (k == NULL)
            continue;
        if (k->kind == CDN_DU_SEQ) {  /* flatten nested sequences one level */
            for (MPI_Count j = 0; j < k->n; j++) {
                u->kids[m++] = cdn_du_retain(k->kids[j]);
                if (m > 1 && same_element(u->kids[m - 2], u->kids[m - 1])) {
                    struct cdn_dt_units *a = u->kids[m - 2], *b = u->kids[m - 1];
                    u->kids[m - 2] = cdn_du_run(a->n + b->n, a->esize, a->xesize, a->parts, a->is_signed);
                    cdn_du_release(a);
                    cdn_du_release(b);
                    m--;
                }
            }
            cdn_du_release(k);
            continue;
        }
        if (m > 0 && same_element(u->kids[m - 1], k)) {
            struct cdn_dt_units *a = u->kids[m - 1];
            u->kids[m - 1] = cdn_du_run(a->n + k->n, a->esize, a->xesize, a->parts, a->is_signed);
            cdn_du_release(a);
            cdn_du_release(k);
            continue;
        }
        u->kids[m++] = k;
    }
    u->n = m;
    if (m == 1) {
        struct cdn_dt_units *only = u->kids[0];
        free(u);
        return only;
    }
    if (m == 0) {
        free(u);
        return NULL;
    }
    for (MPI_Count i = 0; i < m; i++) {
        u->size += u->kids[i]->size;
        u->xsize += u->kids[i]->xsize;
        u->nelems += u->kids[i]->nelems;
    }
    return u;
fail:
    for (MPI_Count i = 0; i < n; i++)
        cdn_du_release(kids[i]);
    return NULL;
}

MPI_Count cdn_du_elements(const struct cdn_dt_units *u, MPI_Count bytes)
{
    if (bytes <= 0 || u == NULL)
        return bytes == 0 ? 0 : MPI_UNDEFINED;
    switch (u->kind) {
    case CDN_DU_RUN:
        return bytes % u->esize == 0 ? bytes / u->esize : MPI_UNDEFINED;
    case CDN_DU_REP: {
        MPI_Count whole = bytes / u->child->size;
        MPI_Count rest = cdn_du_elements(u->child, bytes % u->child->size);
        return rest == MPI_UNDEFINED ? MPI_UNDEFINED : whole * u->child->nelems + rest;
    }
    default: {
        MPI_Count total = 0;
        for (MPI_Count i = 0; i < u->n && bytes > 0; i++) {
            const struct cdn_dt_units *k = u->kids[i];
            MPI_Count take = bytes < k->size ? bytes : k->size;
            MPI_Count e = cdn_du_elements(k, take);
            if (e == MPI_UNDEFINED)
                return MPI_UNDEFINED;
            total += e;
            bytes -= take;
        }
        return total;
    }
    }
}

/* One run: each element's parts become big-endian xesize/parts bytes. */
static void run_convert(const struct cdn_dt_units *u, const char *in, char *out, bool to_ext)
{
    int np = u->esize / u->parts, xp = u->xesize / u->parts;
    MPI_Count parts = u->n * u->parts;
    if (np == 1) {
        memcpy(out, in, (size_t)parts);
        return;
    }
    for (MPI_Count i = 0; i < parts; i++) {
        if (to_ext) {
            for (int b = 0; b < xp; b++)  /* little-endian low bytes, reversed */
                out[b] = in[xp - 1 - b];
            in += np;
            out += xp;
        } else {
            for (int b = 0; b < xp; b++)
                out[b] = in[xp - 1 - b];
            char fill = (u->is_signed && (in[0] & 0x80)) ? (char)0xff : 0;
            for (int b = xp; b < np; b++)
                out[b] = fill;
            in += xp;
            out += np;
        }
    }
}

/* Walk count copies of u; returns how far both streams advanced. */
static void convert(const struct cdn_dt_units *u, MPI_Count count, const char **in, char **out, bool to_ext)
{
    for (MPI_Count c = 0; c < count; c++) {
        switch (u->kind) {
        case CDN_DU_RUN:
            run_convert(u, *in, *out, to_ext);
            *in += to_ext ? u->size : u->xsize;
            *out += to_ext ? u->xsize : u->size;
            break;
        case CDN_DU_REP:
            convert(u->child, u->n, in, out, to_ext);
            break;
        default:
            for (MPI_Count i = 0; i < u->n; i++)
                convert(u->kids[i], 1, in, out, to_ext);
        }
    }
}

void cdn_du_to_external(const struct cdn_dt_units *u, MPI_Count count, const char *native, char *ext)
{
    if (u != NULL)
        convert(u, count, &native, &ext, true);
}

void cdn_du_from_external(const struct cdn_dt_units *u, MPI_Count count, const char *ext, char *native)
{
    if (u != NULL)
        convert(u, count, &ext, &native, false);
}
