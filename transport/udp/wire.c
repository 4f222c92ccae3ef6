/*
 * The checks on every datagram a UDP socket receives (see wire.h), and the
 * parser of CADENCE_UDP_FAULTS.  A datagram is used only when its shape is
 * right and its MAC matches under the job key: anything from outside the
 * job, or damaged on the way, stops here.
 */
#include "transport/udp/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAC_COVERS offsetof(struct udp_dgram, mac)

void cdn_udp_dgram_seal(struct udp_dgram *d, const struct cdn_siphash_key *key)
{
    d->mac = cdn_siphash24(key, d, MAC_COVERS, d + 1, d->len);
}

enum udp_verdict cdn_udp_dgram_check(const void *buf, size_t n, const struct cdn_siphash_key *key,
                                     int world_size, int self)
{
    struct udp_dgram d;
    if (n < sizeof d)
        return UDP_MALFORMED;
    memcpy(&d, buf, sizeof d);
    if (d.magic != UDP_MAGIC || d.version != UDP_VERSION || d.zero != 0 ||
        (size_t)d.len != n - sizeof d || (d.flags & ~(DG_DATA | DG_PROBE)) != 0 ||
        ((d.flags & DG_DATA) != 0) != (d.seq != 0))
        return UDP_MALFORMED;
    uint64_t mac = cdn_siphash24(key, buf, MAC_COVERS, (const char *)buf + sizeof d, d.len);
    if (mac != d.mac)
        return UDP_BAD_MAC;
    if (d.src < 0 || d.src >= world_size || d.src == self)
        return UDP_UNKNOWN_RANK;
    return UDP_OK;
}

bool cdn_udp_faults_parse(const char *spec, struct udp_faults *f, char *why, size_t whylen)
{
    memset(f, 0, sizeof *f);
    f->seed = 1;
    const char *s = spec;
    while (*s != '\0') {
        const char *eq = strchr(s, '='), *end = strchr(s, ',');
        if (end == NULL)
            end = s + strlen(s);
        if (eq == NULL || eq > end) {
            snprintf(why, whylen, "'%.*s' is not key=value", (int)(end - s), s);
            return false;
        }
        size_t klen = (size_t)(eq - s);
        char val[64];
        size_t vlen = (size_t)(end - eq - 1);
        if (vlen == 0 || vlen >= sizeof val) {
            snprintf(why, whylen, "'%.*s' has no value (or one too long)", (int)(end - s), s);
            return false;
        }
        memcpy(val, eq + 1, vlen);
        val[vlen] = '\0';
        char *stop;
        errno = 0;
        if (klen == 4 && strncmp(s, "seed", 4) == 0) {
            unsigned long long v = strtoull(val, &stop, 0);
            if (*stop != '\0' || errno != 0 || val[0] == '-') {
                snprintf(why, whylen, "seed '%s' is not a non-negative integer", val);
                return false;
            }
            f->seed = v;
        } else {
            double *slot = NULL;
            if (klen == 4 && strncmp(s, "drop", 4) == 0)
                slot = &f->drop;
            else if (klen == 3 && strncmp(s, "dup", 3) == 0)
                slot = &f->dup;
            else if (klen == 7 && strncmp(s, "reorder", 7) == 0)
                slot = &f->reorder;
            else if (klen == 7 && strncmp(s, "corrupt", 7) == 0)
                slot = &f->corrupt;
            if (slot == NULL) {
                snprintf(why, whylen, "unknown key '%.*s' (known: drop, dup, reorder, corrupt, "
                         "seed)", (int)klen, s);
                return false;
            }
            double v = strtod(val, &stop);
            if (*stop != '\0' || errno != 0 || !(v >= 0.0 && v < 1.0)) {
                snprintf(why, whylen, "%.*s=%s is not a probability in [0, 1)", (int)klen, s,
                         val);
                return false;
            }
            *slot = v;
        }
        s = *end == ',' ? end + 1 : end;
    }
    f->on = f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->corrupt > 0;
    return true;
}
