/*
 * Shared-memory segments and doorbells of the shm transport (see shm.h).
 *
 * Before the fence: create our segment as a memfd, an eventfd doorbell and
 * an abstract unix socket, and publish the socket's name.  After the fence:
 * hand both fds to every local peer over its socket (SCM_RIGHTS) and map
 * the segments the peers hand us.  A segment never has a name in /dev/shm:
 * there is nothing to unlink, and nothing is left behind when a job is
 * killed at any moment, even in the middle of MPI_Init.  (A named segment
 * would live from its creation before the fence until every peer attached.)
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "progress/engine.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/pmix.h"
#include "transport/shm/shm.h"

#define SHM_MODEX_KEY "cdn.shm.sock"  /* the abstract socket taking our fds */

/* An abstract unix socket address (no file) from its name. */
static socklen_t sock_addr(const char *name, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "%s", name);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Cells per ring for a node of nlocal processes: as many as fit in
 * CADENCE_SHM_RING_MIB (16 MiB) of inbound rings per process, a power of
 * two from SHM_RING_CELLS (64) to SHM_RING_CELLS_MAX (256).  A window of
 * 64 rendezvous messages of 64 KiB streamed through the ring (the
 * two-copy path) fits whole in 256 cells; with 64 the sender filled the
 * ring and both sides waited on each other (docs/progress.md,
 * "Protocols").  Every process of the node computes the same. */
static uint32_t ring_cells_for(int nlocal)
{
    long mib = cdn_param_long("CADENCE_SHM_RING_MIB", 16, 1, 1 << 20);
    uint64_t fit = ((uint64_t)mib << 20) / ((uint64_t)(nlocal > 1 ? nlocal - 1 : 1) * SHM_CELL_SIZE);
    uint32_t n = SHM_RING_CELLS;
    while (n < SHM_RING_CELLS_MAX && 2 * (uint64_t)n <= fit)
        n *= 2;
    return n;
}

int shm_seg_create(struct shm_state *st)
{
    uint32_t cells = ring_cells_for(st->nlocal);
    size_t ring_bytes = shm_ring_bytes(cells);
    st->seglen = sizeof(struct shm_seg) + (size_t)st->nlocal * ring_bytes;
    snprintf(st->segname, sizeof st->segname, "cadence.%d.%d.bell", (int)getpid(), st->tp.ctx);
    st->segfd = memfd_create("cadence-shm", MFD_CLOEXEC);
    if (st->segfd < 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: cannot create a memfd: %s",
                       strerror(errno));
    if (ftruncate(st->segfd, (off_t)st->seglen) != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: cannot size the segment to %zu "
                       "bytes: %s", st->seglen, strerror(errno));
    st->seg = mmap(NULL, st->seglen, PROT_READ | PROT_WRITE, MAP_SHARED, st->segfd, 0);
    if (st->seg == MAP_FAILED) {
        st->seg = NULL;
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: cannot map %zu bytes: %s",
                       st->seglen, strerror(errno));
    }
    st->seg->magic = SHM_MAGIC;
    st->seg->nlocal = (uint32_t)st->nlocal;
    st->seg->ring_cells = cells;
    st->seg->ring_bytes = ring_bytes;
    st->seg->serves_push = cdn_progress_thread_running() && st->cma != 0;
    atomic_init(&st->seg->attached, 0);
    atomic_init(&st->seg->bell.sleepers, 0);
    atomic_init(&st->seg->bell.polled, 0);
    for (int w = 0; w < SHM_NWANTS; w++)
        atomic_init(shm_bell_want(&st->seg->bell, w), 0);
    for (int i = 0; i < st->nlocal; i++)
        shm_ring_init(shm_seg_ring(st->seg, i), cells);

    st->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    st->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t alen = sock_addr(st->segname, &a);
    if (st->efd < 0 || st->sock < 0 || bind(st->sock, (struct sockaddr *)&a, alen) != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: doorbell setup failed: %s",
                       strerror(errno));
    char key[64];
    cdn_transport_modex_key(&st->tp, SHM_MODEX_KEY, key, sizeof key);
    return cdn_modex_put(key, st->segname, strlen(st->segname) + 1);
}

/* What a peer published: its pid (CMA) and its socket's name. */
static int peer_addr(struct shm_state *st, int i)
{
    struct shm_peer *p = &st->peers[i];
    size_t len = sizeof p->sockname;
    char key[64];
    cdn_transport_modex_key(&st->tp, SHM_MODEX_KEY, key, sizeof key);
    int rc = cdn_modex_get(p->world, key, p->sockname, &len);
    if (rc != MPI_SUCCESS)
        return rc;
    p->sockname[sizeof p->sockname - 1] = '\0';
    len = sizeof p->pid;
    return cdn_modex_get(p->world, CDN_MODEX_PID, &p->pid, &len);
}

/* Fault a ring's pages in now (CADENCE_SHM_PREFAULT) rather than at the
 * first message through each cell: a cell's first use cost its writer and
 * its reader a page fault per 4 KiB (10-20 us for a 16 KiB cell), which
 * the first 64 messages of each size to a peer paid.  Errors are ignored:
 * the pages then fault on first use as before. */
static void prefault(struct shm_ring *r)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)r & ~(uintptr_t)(page - 1);
    size_t len = (uintptr_t)r + shm_ring_bytes(r->ncells) - start;
    (void)madvise((void *)start, len, MADV_POPULATE_WRITE);
}

/* Map a peer's segment from the memfd it sent. */
static int map_peer(struct shm_state *st, int i, int fd)
{
    struct shm_peer *p = &st->peers[i];
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: rank %d's segment: %s", p->world,
                       strerror(errno));
    p->seglen = (size_t)sb.st_size;
    p->seg = mmap(NULL, p->seglen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p->seg == MAP_FAILED || p->seg->magic != SHM_MAGIC || (int)p->seg->nlocal != st->nlocal ||
        p->seg->ring_bytes != shm_ring_bytes(p->seg->ring_cells) ||
        p->seglen < sizeof(struct shm_seg) + (size_t)st->nlocal * p->seg->ring_bytes) {
        p->seg = NULL;
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: rank %d's segment is not usable",
                       p->world);
    }
    atomic_fetch_add(&p->seg->attached, 1);
    shm_prod_open(&p->prod, shm_seg_ring(p->seg, st->me));
    shm_cons_open(&p->cons, shm_seg_ring(st->seg, i));
    if (st->nlocal <= st->prefault_max) {
        prefault(shm_seg_ring(p->seg, st->me));
        prefault(shm_seg_ring(st->seg, i));
    }
    return MPI_SUCCESS;
}

static int send_bell(struct shm_state *st, int i)
{
    struct sockaddr_un a;
    socklen_t alen = sock_addr(st->peers[i].sockname, &a);
    int me = st->me;
    struct iovec iov = {.iov_base = &me, .iov_len = sizeof me};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(2 * sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr m = {.msg_name = &a, .msg_namelen = alen, .msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    int fds[2] = {st->segfd, st->efd};
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    if (sendmsg(st->sock, &m, 0) == (ssize_t)sizeof me)
        return 1;
    return (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED ||
            errno == ENOENT) ? 0 : -1;
}

/* Take one peer's segment and doorbell: 1 done, 0 nothing (yet), < 0 an
 * MPI error code. */
static int recv_bell(struct shm_state *st)
{
    int who = -1;
    struct iovec iov = {.iov_base = &who, .iov_len = sizeof who};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(2 * sizeof(int))];
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                       .msg_controllen = sizeof ctl.buf};
    if (recvmsg(st->sock, &m, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof who)
        return 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (c == NULL || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
        return 0;
    int fds[2];
    memcpy(fds, CMSG_DATA(c), sizeof fds);
    if (who < 0 || who >= st->nlocal || who == st->me || st->peers[who].efd >= 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    int rc = map_peer(st, who, fds[0]);
    close(fds[0]);
    st->peers[who].efd = fds[1];
    return rc == MPI_SUCCESS ? 1 : rc;
}

int shm_seg_attach_all(struct shm_state *st)
{
    for (int i = 0; i < st->nlocal; i++) {
        if (i == st->me)
            continue;
        int rc = peer_addr(st, i);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    /* Segment and doorbell fds: send ours to everyone, collect theirs;
     * nonblocking both ways so no pair of processes can wait on each
     * other's full socket queue. */
    int to_send = st->nlocal - 1, to_recv = st->nlocal - 1;
    bool *sent = calloc((size_t)st->nlocal, sizeof *sent);
    if (sent == NULL)
        return cdn_err(MPI_ERR_NO_MEM, "MPI_Init: shm transport: out of memory");
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (to_send > 0 || to_recv > 0) {
        for (int i = 0; i < st->nlocal; i++) {
            if (i == st->me || sent[i])
                continue;
            int r = send_bell(st, i);
            if (r < 0) {
                free(sent);
                return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: cannot send the doorbell "
                               "to rank %d: %s", st->peers[i].world, strerror(errno));
            }
            if (r > 0) {
                sent[i] = true;
                to_send--;
            }
        }
        int got;
        while (to_recv > 0 && (got = recv_bell(st)) != 0) {
            if (got < 0) {
                free(sent);
                return got;
            }
            to_recv--;
        }
        if (to_send > 0 || to_recv > 0) {
            struct pollfd pfd = {.fd = st->sock, .events = POLLIN};
            poll(&pfd, 1, 10);
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - t0.tv_sec > 120) {
                free(sent);
                return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: local peers did not "
                               "exchange doorbells within 120 s");
            }
        }
    }
    free(sent);
    close(st->sock);
    st->sock = -1;
    close(st->segfd);  /* the mappings keep the memory */
    st->segfd = -1;
    return MPI_SUCCESS;
}

void shm_seg_destroy(struct shm_state *st)
{
    for (int i = 0; i < st->nlocal; i++) {
        struct shm_peer *p = &st->peers[i];
        if (p->seg != NULL)
            munmap(p->seg, p->seglen);
        if (p->efd >= 0)
            close(p->efd);
    }
    if (st->seg != NULL)
        munmap(st->seg, st->seglen);
    if (st->segfd >= 0)
        close(st->segfd);
    if (st->efd >= 0)
        close(st->efd);
    if (st->sock >= 0)
        close(st->sock);
}
