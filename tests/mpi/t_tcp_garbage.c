/*
 * Strangers at a rank's TCP port (run over CADENCE_TRANSPORTS=tcp on two
 * ranks): while the job runs, rank 0 opens connections to rank 1's
 * listening address (read from the PMIx modex, as any process of the job
 * could) and sends random bytes, a well-formed hello with a wrong key, a
 * truncated hello, and nothing at all.  Each must be closed by rank 1
 * without an answer, and the job must go on: rendezvous and eager messages
 * both ways arrive intact afterwards.  Rank 1 logs each closed connection
 * (the meson test checks one of those lines).
 */
#include <errno.h>
#include <mpi.h>
#include <netinet/in.h>
#include <pmix.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_mpi.h"
#include "exchange.h"

struct addr { uint32_t ip; uint16_t port, zero; };  /* as transport/tcp publishes it */

static int open_to(const struct addr *a)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = a->port, .sin_addr.s_addr = a->ip};
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Did the peer close the socket (EOF or reset) within 10 s, saying nothing? */
static int closed_silently(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1)
        return 0;
    char b[64];
    ssize_t n = recv(fd, b, sizeof b, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "runs on 2 ranks (got %d)", size);
    exchange(rank, 100, 1);  /* the real connection exists before the strangers come */
    if (rank == 0) {
        pmix_proc_t me, peer;
        CHECK(PMIx_Init(&me, NULL, 0) == PMIX_SUCCESS, "PMIx_Init");
        PMIX_LOAD_PROCID(&peer, me.nspace, 1);
        pmix_value_t *v = NULL;
        struct addr a = {0};
        int got = PMIx_Get(&peer, "cdn.tcp.addr", NULL, 0, &v) == PMIX_SUCCESS && v != NULL &&
                  v->type == PMIX_BYTE_OBJECT && v->data.bo.size == sizeof a;
        CHECK(got, "rank 1's TCP address from the modex");
        if (got)
            memcpy(&a, v->data.bo.bytes, sizeof a);
        if (v != NULL)
            PMIX_VALUE_RELEASE(v);
        unsigned char junk[300];
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (unsigned char)(rand() ^ (int)i);
        /* a hello in the right shape (magic "CDNT", version 2, kind HELLO,
         * rank 0) with a key that is not the job's */
        unsigned char hello[48] = {'C', 'D', 'N', 'T', 2, 0, 1, 0};
        for (int i = 16; i < 48; i++)
            hello[i] = (unsigned char)(i * 29);
        struct { const char *what; const void *bytes; size_t len; } cases[] = {
            {"random bytes", junk, sizeof junk},
            {"a hello with a wrong key", hello, sizeof hello},
            {"a truncated hello", hello, 20},
            {"silence", NULL, 0},
        };
        for (size_t c = 0; got && c < sizeof cases / sizeof cases[0]; c++) {
            int fd = open_to(&a);
            CHECK(fd >= 0, "connect to rank 1 for %s", cases[c].what);
            if (fd < 0)
                continue;
            if (cases[c].len > 0)
                CHECK(send(fd, cases[c].bytes, cases[c].len, MSG_NOSIGNAL) == (ssize_t)cases[c].len,
                      "send %s", cases[c].what);
            CHECK(closed_silently(fd), "rank 1 closed the connection that sent %s, unanswered",
                  cases[c].what);
            close(fd);
        }
        PMIx_Finalize(NULL, 0);
    }
    exchange(rank, 3 << 20, 2);  /* rendezvous */
    exchange(rank, 1000, 3);     /* eager */
    int rc = check_summary(rank == 0 ? "t_tcp_garbage[0]" : "t_tcp_garbage[1]");
    MPI_Finalize();
    return rc;
}
