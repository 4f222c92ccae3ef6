/*
 * Packing and unpacking byte ranges of (buf, count, datatype), and the
 * segment (iovec) view of a type.
 *
 * Every call descends the layout tree once to the start of its range: a
 * division at a vector level, a binary search over block prefix sums at a
 * block level.  Nothing is remembered between calls, so a rendezvous can
 * pack chunk k+1 after chunk k, or any chunk in any order, at the same cost.
 * After the descent the data moves in leaf loops specialised by element size
 * (1, 2, 4, 8, 16 bytes or memcpy of a run), with no call per element.
 * MPIX_Type_iov walks the same tree counting segments instead of bytes.
 *
 * A pack of CDN_DT_NT_BYTES or more writes its strided leaves with
 * non-temporal stores (x86 movnti), as glibc's memcpy does for large copies:
 * the packed buffer is far larger than the cache and not read back soon, so
 * reading each destination line into the cache first (write-allocate) would
 * only add a third of the memory traffic.  Smaller packs -- the pipelined
 * rendezvous chunks a peer reads at once -- stay in the cache.
 */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/copy.h"
#include "runtime/datatype_impl.h"

enum dir { PACK, UNPACK };

struct cursor {
    char *packed;  /* the contiguous side */
    enum dir dir;
    bool stream;   /* pack with non-temporal stores (see the header) */
};

#define CDN_DT_NT_BYTES (4 << 20)

static inline void copy_run(char *mem, MPI_Count len, struct cursor *c)
{
    if (c->dir == PACK)
        cdn_copy(c->packed, mem, (size_t)len);
    else
        cdn_copy(mem, c->packed, (size_t)len);
    c->packed += len;
}

/* n elements of `size` bytes, `stride` apart: the hot loop of strided types. */
#define STRIDED(T, size)                                                     \
    do {                                                                     \
        if (c->dir == PACK)                                                  \
            for (MPI_Count i = 0; i < n; i++, mem += stride, pk += size)     \
                memcpy(pk, mem, size);                                       \
        else                                                                 \
            for (MPI_Count i = 0; i < n; i++, mem += stride, pk += size)     \
                memcpy(mem, pk, size);                                       \
    } while (0)

#if defined(__x86_64__)
/* n blocks of size (a multiple of 8) bytes, stride apart, packed with
 * non-temporal 8-byte stores. */
static void strided_stream(const char *mem, MPI_Aint stride, MPI_Count size, MPI_Count n, char *pk)
{
    if (size == 8 && ((uintptr_t)pk & 15) == 0) {   /* two blocks per 16-byte store */
        for (; n >= 2; n -= 2, mem += 2 * stride, pk += 16) {
            long long a, b;
            memcpy(&a, mem, 8);
            memcpy(&b, mem + stride, 8);
            _mm_stream_si128((__m128i *)(void *)pk, _mm_set_epi64x(b, a));
        }
        if (n == 1)
            memcpy(pk, mem, 8);
        return;
    }
    if (size % 16 == 0 && ((uintptr_t)pk & 15) == 0) {
        for (MPI_Count i = 0; i < n; i++, mem += stride)
            for (MPI_Count k = 0; k < size; k += 16, pk += 16)
                _mm_stream_si128((__m128i *)(void *)pk,
                                 _mm_loadu_si128((const __m128i *)(const void *)(mem + k)));
        return;
    }
    for (MPI_Count i = 0; i < n; i++, mem += stride)
        for (MPI_Count k = 0; k < size; k += 8, pk += 8) {
            long long w;
            memcpy(&w, mem + k, 8);
            _mm_stream_si64((long long *)(void *)pk, w);
        }
}
#endif

static void strided(char *mem, MPI_Aint stride, MPI_Count size, MPI_Count n, struct cursor *c)
{
    char *pk = c->packed;
#if defined(__x86_64__)
    if (c->stream && size % 8 == 0) {
        strided_stream(mem, stride, size, n, pk);
        c->packed = pk + size * n;
        return;
    }
#endif
    switch (size) {
    case 1: STRIDED(uint8_t, 1); break;
    case 2: STRIDED(uint16_t, 2); break;
    case 4: STRIDED(uint32_t, 4); break;
    case 8: STRIDED(uint64_t, 8); break;
    case 16: STRIDED(char, 16); break;
    case 32: STRIDED(char, 32); break;
    default: STRIDED(char, (size_t)size); break;
    }
    c->packed = pk;
}

static void xfer(const struct cdn_dt_node *n, char *base, MPI_Count skip, MPI_Count len, struct cursor *c);

/* Bytes [skip, skip+len) of `count` copies of child, `stride` apart from base. */
static void xfer_rep(const struct cdn_dt_node *child, char *base, MPI_Aint stride, MPI_Count count,
                     MPI_Count skip, MPI_Count len, struct cursor *c)
{
    MPI_Count cs = child->size;
    (void)count;
    if (child->kind == CDN_DT_LEAF) {
        base += child->off;
        if (stride == cs) {
            copy_run(base + skip, len, c);
            return;
        }
        char *p = base + skip / cs * stride;
        MPI_Count r = skip % cs;
        if (r != 0) {
            MPI_Count m = cs - r < len ? cs - r : len;
            copy_run(p + r, m, c);
            len -= m;
            p += stride;
        }
        MPI_Count full = len / cs;
        if (full > 0)
            strided(p, stride, cs, full, c);
        p += full * stride;
        len -= full * cs;
        if (len > 0)
            copy_run(p, len, c);
        return;
    }
    char *p = base + skip / cs * stride;
    MPI_Count r = skip % cs;
    while (len > 0) {
        MPI_Count m = cs - r < len ? cs - r : len;
        xfer(child, p, r, m, c);
        len -= m;
        r = 0;
        p += stride;
    }
}

/* The last block whose prefix (bytes or segments) is <= pos. */
static MPI_Count find_block(const struct cdn_dt_node *n, MPI_Count pos, bool by_segments)
{
    MPI_Count lo = 0, hi = n->count - 1;
    while (lo < hi) {
        MPI_Count mid = lo + (hi - lo + 1) / 2;
        MPI_Count v = by_segments ? n->blocks[mid].pseg : n->blocks[mid].psize;
        if (v <= pos)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static void xfer(const struct cdn_dt_node *n, char *base, MPI_Count skip, MPI_Count len, struct cursor *c)
{
    base += n->off;
    switch (n->kind) {
    case CDN_DT_LEAF:
        copy_run(base + skip, len, c);
        return;
    case CDN_DT_VEC:
        xfer_rep(n->child, base, n->stride, n->count, skip, len, c);
        return;
    default:
        for (MPI_Count i = find_block(n, skip, false); len > 0; i++) {
            const struct cdn_dt_block *b = &n->blocks[i];
            MPI_Count r = skip - b->psize, bs = b->blen * b->child->size;
            MPI_Count m = bs - r < len ? bs - r : len;
            xfer_rep(b->child, base + b->disp, b->stride, b->blen, r, m, c);
            len -= m;
            skip += m;
        }
    }
}

/* cdn_datatype_is_contig, inline */
static inline char *contig_run(const void *buf, MPI_Count count, const struct cdn_datatype *dt,
                               MPI_Count *bytes)
{
    *bytes = count * dt->size;
    bool contig = *bytes == 0 || (dt->root->kind == CDN_DT_LEAF &&
                                  (count == 1 || dt->ub - dt->lb == dt->size));
    return contig ? (char *)(uintptr_t)buf + dt->true_lb : NULL;
}

char *cdn_dt_contig_run(const void *buf, MPI_Count count, const struct cdn_datatype *dt,
                        MPI_Count *bytes)
{
    return contig_run(buf, count, dt, bytes);
}

void cdn_dt_segment_init(struct cdn_dt_segment *seg, const void *buf, MPI_Count count,
                         struct cdn_datatype *dt)
{
    seg->ref = !dt->builtin;  /* cdn_datatype_retain, inline */
    if (seg->ref)
        atomic_fetch_add_explicit(&dt->refs, 1, memory_order_relaxed);
    seg->buf = (char *)(uintptr_t)buf;
    seg->count = count > 0 ? count : 0;
    seg->dt = dt;
    seg->contig = contig_run(buf, seg->count, dt, &seg->bytes);
}

static MPI_Count segment_xfer(struct cdn_dt_segment *seg, MPI_Count offset, char *packed, MPI_Count len,
                              enum dir dir)
{
    if (offset < 0 || len <= 0 || offset >= seg->bytes)
        return 0;
    if (len > seg->bytes - offset)
        len = seg->bytes - offset;
    if (seg->contig != NULL) {  /* one run: what copy_run below does, without the cursor */
        if (dir == PACK)
            cdn_copy(packed, seg->contig + offset, (size_t)len);
        else
            cdn_copy(seg->contig + offset, packed, (size_t)len);
        return len;
    }
    struct cursor c = {.packed = packed, .dir = dir, .stream = dir == PACK && len >= CDN_DT_NT_BYTES};
    xfer_rep(seg->dt->root, seg->buf, seg->dt->ub - seg->dt->lb, seg->count, offset, len, &c);
#if defined(__x86_64__)
    if (c.stream)
        _mm_sfence();   /* the stores are ordered before whatever reports the pack done */
#endif
    return len;
}

MPI_Count cdn_dt_pack(struct cdn_dt_segment *seg, MPI_Count offset, void *dst, MPI_Count len)
{
    return segment_xfer(seg, offset, dst, len, PACK);
}

MPI_Count cdn_dt_unpack(struct cdn_dt_segment *seg, MPI_Count offset, const void *src, MPI_Count len)
{
    return segment_xfer(seg, offset, (char *)(uintptr_t)src, len, UNPACK);
}

/* ---- segments (MPIX_Type_iov) ---- */

static bool rep_is_run(const struct cdn_dt_node *child, MPI_Count count, MPI_Aint stride)
{
    return child->kind == CDN_DT_LEAF && (count == 1 || stride == child->size);
}

MPI_Count cdn_dt_iov_count(const struct cdn_datatype *dt)
{
    return dt->root != NULL ? dt->root->nsegs : 0;
}

static void iov_len_node(const struct cdn_dt_node *n, MPI_Count max, MPI_Count *segs, MPI_Count *bytes);

/* Whole segments of count copies of child within the first max bytes. */
static void iov_len_rep(const struct cdn_dt_node *child, MPI_Count count, MPI_Aint stride, MPI_Count max,
                        MPI_Count *segs, MPI_Count *bytes)
{
    MPI_Count total = count * child->size;
    if (rep_is_run(child, count, stride)) {
        if (max >= total)
            *segs += 1, *bytes += total;
        return;
    }
    MPI_Count whole = max / child->size;
    if (whole >= count) {
        *segs += count * child->nsegs, *bytes += total;
        return;
    }
    *segs += whole * child->nsegs;
    *bytes += whole * child->size;
    iov_len_node(child, max - whole * child->size, segs, bytes);
}

static void iov_len_node(const struct cdn_dt_node *n, MPI_Count max, MPI_Count *segs, MPI_Count *bytes)
{
    if (max <= 0)
        return;
    switch (n->kind) {
    case CDN_DT_LEAF:
        if (max >= n->size)
            *segs += 1, *bytes += n->size;
        return;
    case CDN_DT_VEC:
        iov_len_rep(n->child, n->count, n->stride, max, segs, bytes);
        return;
    default: {
        MPI_Count i = find_block(n, max, false);
        const struct cdn_dt_block *b = &n->blocks[i];
        *segs += b->pseg;
        *bytes += b->psize;
        iov_len_rep(b->child, b->blen, b->stride, max - b->psize, segs, bytes);
    }
    }
}

void cdn_dt_iov_len(const struct cdn_datatype *dt, MPI_Count max_bytes, MPI_Count *n, MPI_Count *bytes)
{
    *n = 0;
    *bytes = 0;
    if (dt->root == NULL)
        return;
    if (max_bytes < 0 || max_bytes >= dt->size) {
        *n = dt->root->nsegs;
        *bytes = dt->size;
        return;
    }
    iov_len_node(dt->root, max_bytes, n, bytes);
}

struct iov_out {
    MPIX_Iov *iov;
    MPI_Count left;
};

static void iov_node(const struct cdn_dt_node *n, MPI_Aint base, MPI_Count skip, struct iov_out *o);

static void iov_emit(MPI_Aint p, MPI_Count len, struct iov_out *o)
{
    o->iov->iov_base = (void *)(uintptr_t)p;
    o->iov->iov_len = len;
    o->iov++;
    o->left--;
}

static void iov_rep(const struct cdn_dt_node *child, MPI_Aint base, MPI_Aint stride, MPI_Count count,
                    MPI_Count skip, struct iov_out *o)
{
    if (rep_is_run(child, count, stride)) {
        if (skip == 0 && o->left > 0)
            iov_emit(base + child->off, count * child->size, o);
        return;
    }
    MPI_Count cn = child->nsegs;
    for (MPI_Count i = skip / cn, r = skip % cn; i < count && o->left > 0; i++, r = 0)
        iov_node(child, base + i * stride, r, o);
}

static void iov_node(const struct cdn_dt_node *n, MPI_Aint base, MPI_Count skip, struct iov_out *o)
{
    base += n->off;
    switch (n->kind) {
    case CDN_DT_LEAF:
        if (skip == 0 && o->left > 0)
            iov_emit(base, n->size, o);
        return;
    case CDN_DT_VEC:
        iov_rep(n->child, base, n->stride, n->count, skip, o);
        return;
    default:
        for (MPI_Count i = find_block(n, skip, true); i < n->count && o->left > 0; i++) {
            const struct cdn_dt_block *b = &n->blocks[i];
            MPI_Count r = skip > b->pseg ? skip - b->pseg : 0;
            iov_rep(b->child, base + b->disp, b->stride, b->blen, r, o);
        }
    }
}

MPI_Count cdn_dt_iov(const struct cdn_datatype *dt, MPI_Aint base, MPI_Count first, MPIX_Iov *iov, MPI_Count max)
{
    if (dt->root == NULL || first < 0 || first >= dt->root->nsegs || max <= 0)
        return 0;
    struct iov_out o = {.iov = iov, .left = max};
    iov_node(dt->root, base, first, &o);
    return max - o.left;
}
