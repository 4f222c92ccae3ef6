/*
 * The checks on everything a TCP peer sends (see frame.h).  Every length
 * and type is checked here before the transport looks at the rest, so a
 * malformed or truncated frame is an error reported by the caller, never
 * an out-of-bounds read.
 */
#include "transport/tcp/frame.h"

#include <string.h>

bool cdn_tcp_frame_check(const struct tcp_frame *f, uint32_t eager_max, const char **why)
{
    if (f->type == 0 || f->type >= F_TYPE_END) {
        *why = "unknown frame type";
        return false;
    }
    if (f->zero[0] != 0 || f->zero[1] != 0 || f->zero[2] != 0) {
        *why = "reserved header bytes are not zero";
        return false;
    }
    if (eager_max > TCP_EAGER_MAX)
        eager_max = TCP_EAGER_MAX;
    const uint32_t known = CDN_WIRE_SYNC | CDN_WIRE_RNDV;
    switch (f->type) {
    case F_EAGER:
        if (f->len != f->h.bytes || f->len > eager_max) {
            *why = "eager payload length is inconsistent or over the eager limit";
            return false;
        }
        if ((f->h.flags & ~CDN_WIRE_SYNC) != 0 || f->h.src < 0) {
            *why = "eager match header has bad flags or a negative source";
            return false;
        }
        return true;
    case F_RTS:
        if (f->len != 0 || (f->h.flags & ~known) != 0 || !(f->h.flags & CDN_WIRE_RNDV) ||
            f->h.src < 0) {
            *why = "rendezvous header has a payload, bad flags or a negative source";
            return false;
        }
        return true;
    case F_AM:
        if (f->len > TCP_AM_MAX || f->a == 0 || f->a > UINT16_MAX) {
            *why = "active message is over its limit or names no handler";
            return false;
        }
        return true;
    case F_DATA:
        if (f->len == 0 || f->len > TCP_DATA_CHUNK) {
            *why = "data frame length is 0 or over the chunk size";
            return false;
        }
        return true;
    default:
        if (f->len != 0) {
            *why = "control frame carries a payload";
            return false;
        }
        return true;
    }
}

size_t cdn_tcp_frame_parse(const void *buf, size_t avail, uint32_t eager_max,
                           struct tcp_frame *out, const char **why)
{
    if (avail < sizeof *out)
        return CDN_TCP_NEED_MORE;
    memcpy(out, buf, sizeof *out);
    if (!cdn_tcp_frame_check(out, eager_max, why))
        return CDN_TCP_BAD;
    size_t need = sizeof *out + (out->type == F_EAGER || out->type == F_AM ? out->len : 0);
    return avail < need ? CDN_TCP_NEED_MORE : need;
}

/* Compare without an early exit, so the time taken says nothing about the key. */
static bool same_key(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0;
    for (int i = 0; i < TCP_KEY_BYTES; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return d == 0;
}

static bool header_ok(const struct tcp_hello *h, const char **why)
{
    if (h->magic != TCP_MAGIC) {
        *why = "not a Cadence connection (bad magic)";
        return false;
    }
    if (h->version != TCP_VERSION) {
        *why = "protocol version differs";
        return false;
    }
    if (h->zero != 0) {
        *why = "reserved hello bytes are not zero";
        return false;
    }
    return true;
}

bool cdn_tcp_hello_check(const struct tcp_hello *h, const uint8_t key[TCP_KEY_BYTES],
                         int world_size, int self, int *rank, const char **why)
{
    if (!header_ok(h, why))
        return false;
    if (h->kind != TCP_HELLO) {
        *why = "first message is not a hello";
        return false;
    }
    if (!same_key(h->key, key)) {
        *why = "wrong job key";
        return false;
    }
    if (h->rank < 0 || h->rank >= world_size || h->rank == self) {
        *why = "rank out of range";
        return false;
    }
    *rank = h->rank;
    return true;
}

int cdn_tcp_reply_check(const struct tcp_hello *h, const char **why)
{
    if (!header_ok(h, why))
        return 0;
    if (h->kind != TCP_ACCEPT && h->kind != TCP_REJECT) {
        *why = "reply is neither accept nor reject";
        return 0;
    }
    return h->kind;
}
