/*
 * Strangers at a rank's UDP socket (run over CADENCE_TRANSPORTS=udp on two
 * ranks): while the job runs, rank 0 sends rank 1's socket (its address
 * read from the PMIx modex, as any process of the job could) datagrams
 * from a socket of its own that is not the job's: random bytes of random
 * lengths, well-formed headers with a wrong MAC, and, made with the job
 * key (from the modex too), well-made datagrams that claim to come from
 * rank 0 and from a rank that does not exist, short ones (SipHash) and
 * long ones (AES-GMAC) (sealed by transport/udp/wire.c).  Rank 1 must drop every one
 * (counted: bad MAC, unknown sender) and the job must go on: eager and
 * rendezvous messages both ways arrive intact between the volleys.  The
 * meson test checks rank 1's counts in its report line.
 */
#include <mpi.h>
#include <netinet/in.h>
#include <stddef.h>
#include <pmix.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_mpi.h"
#include "exchange.h"
#include "transport/udp/wire.h"

struct addr { uint32_t ip; uint16_t port, zero; uint32_t mtu, window; };  /* as transport/udp publishes it */

/* transport/udp/wire.h's header, written out: a stranger's view of the wire */
struct dgram {
    uint32_t magic;
    uint8_t version, flags;
    uint16_t len;
    int32_t src;
    uint32_t ts, ts_echo, zero;
    uint64_t seq, ack, sack[4], ctr, mac;
};
_Static_assert(sizeof(struct dgram) == sizeof(struct udp_dgram), "the header as wire.h has it");

static int get_bytes(const pmix_proc_t *who, const char *key, void *out, size_t len)
{
    pmix_value_t *v = NULL;
    int ok = PMIx_Get(who, key, NULL, 0, &v) == PMIX_SUCCESS && v != NULL &&
             v->type == PMIX_BYTE_OBJECT && v->data.bo.size == len;
    if (ok)
        memcpy(out, v->data.bo.bytes, len);
    if (v != NULL)
        PMIX_VALUE_RELEASE(v);
    return ok;
}

/* One volley of garbage at a; returns the datagrams sent. */
static int volley(int fd, const struct sockaddr_in *a, struct udp_mac *key, unsigned seed)
{
    _Alignas(8) unsigned char buf[2048];
    int sent = 0;
    srand(seed);
    for (int i = 0; i < 100; i++) {  /* random bytes, 0..2047 of them */
        size_t n = (size_t)(rand() % (int)sizeof buf);
        for (size_t k = 0; k < n; k++)
            buf[k] = (unsigned char)rand();
        sent += sendto(fd, buf, n, 0, (const struct sockaddr *)a, sizeof *a) == (ssize_t)n;
    }
    for (int i = 0; i < 50; i++) {  /* the right shape, a wrong MAC, and then a right one */
        uint16_t len = i % 2 == 0 ? 64 : 1024;  /* SipHash's, and AES-GMAC's */
        struct dgram d = {.magic = 0x55444e43u, .version = 3, .flags = 1, .len = len, .ts = 1,
                          .src = i % 3 == 2 ? 99 : 0, .seq = 1 + (uint64_t)i, .ack = 1,
                          .ctr = 0xffffull << 48 | (uint64_t)i};
        memset(buf + sizeof d, i, len);
        memcpy(buf, &d, sizeof d);
        cdn_udp_dgram_seal((struct udp_dgram *)buf, key);
        if (i % 3 == 0) {
            uint64_t bad = (uint64_t)rand() * 7919u;
            memcpy(buf + offsetof(struct dgram, mac), &bad, sizeof bad);
        }
        sent += sendto(fd, buf, sizeof d + len, 0, (const struct sockaddr *)a, sizeof *a) ==
                (ssize_t)(sizeof d + len);
    }
    return sent;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "runs on 2 ranks (got %d)", size);
    exchange(rank, 100, 1);
    int fd = -1, got = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    struct udp_mac key = {0};
    if (rank == 0) {
        pmix_proc_t me, peer;
        CHECK(PMIx_Init(&me, NULL, 0) == PMIX_SUCCESS, "PMIx_Init");
        PMIX_LOAD_PROCID(&peer, me.nspace, 1);
        struct addr a = {0};
        uint8_t k[32];
        got = get_bytes(&peer, "cdn.udp.addr", &a, sizeof a) && get_bytes(&me, "cdn.jobkey", k, 32);
        CHECK(got, "rank 1's UDP address and the job key from the modex");
        sa.sin_port = a.port;
        sa.sin_addr.s_addr = a.ip;
        cdn_udp_mac_key(&key, k);
        CHECK(cdn_udp_mac_open(&key), "an AES-GCM context");
        fd = socket(AF_INET, SOCK_DGRAM, 0);
        CHECK(fd >= 0, "a socket of a stranger");
    }
    for (unsigned round = 0; round < 3; round++) {
        if (rank == 0 && got && fd >= 0)
            CHECK(volley(fd, &sa, &key, round + 1) == 150, "volley %u sent whole", round);
        exchange(rank, 3 << 20, 2 + round);  /* rendezvous */
        exchange(rank, 1000, 7 + round);     /* eager */
    }
    if (rank == 0) {
        if (fd >= 0)
            close(fd);
        cdn_udp_mac_close(&key);
        PMIx_Finalize(NULL, 0);
    }
    int rc = check_summary(rank == 0 ? "t_udp_garbage[0]" : "t_udp_garbage[1]");
    MPI_Finalize();
    return rc;
}
