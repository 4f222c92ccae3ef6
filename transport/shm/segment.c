/*
 * Shared-memory segments and doorbells of the shm transport (see shm.h).
 *
 * Before the fence: create our segment (/dev/shm/cadence.<pid>), an eventfd
 * doorbell and an abstract unix socket, and publish the segment's name.
 * After the fence: map every local peer's segment, then hand our eventfd to
 * each peer over its socket (SCM_RIGHTS: an eventfd cannot be opened by
 * name) and collect theirs.  A peer sends its fd only after it has mapped
 * every segment, so once we hold all fds every peer has attached ours and
 * we unlink it: nothing is left in /dev/shm even if the job is killed later.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "runtime/error.h"
#include "runtime/pmix.h"
#include "transport/shm/shm.h"

#define SHM_MODEX_KEY "cdn.shm.seg"

static socklen_t bell_addr(pid_t pid, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "cadence.%d.bell", (int)pid);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int shm_seg_create(struct shm_state *st)
{
    st->seglen = sizeof(struct shm_seg) + (size_t)st->nlocal * sizeof(struct shm_ring);
    snprintf(st->segname, sizeof st->segname, "/cadence.%d", (int)getpid());
    int fd = shm_open(st->segname, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: cannot create %s: %s",
                       st->segname, strerror(errno));
    if (ftruncate(fd, (off_t)st->seglen) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(st->segname);
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: cannot size %s to %zu bytes: %s",
                       st->segname, st->seglen, strerror(e));
    }
    st->seg = mmap(NULL, st->seglen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (st->seg == MAP_FAILED) {
        st->seg = NULL;
        shm_unlink(st->segname);
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: cannot map %s: %s", st->segname,
                       strerror(errno));
    }
    st->seg->magic = SHM_MAGIC;
    st->seg->nlocal = (uint32_t)st->nlocal;
    atomic_init(&st->seg->attached, 0);
    atomic_init(&st->seg->bell.sleepers, 0);
    for (int i = 0; i < st->nlocal; i++)
        shm_ring_init(&st->seg->rings[i]);

    st->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    st->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t alen = bell_addr(getpid(), &a);
    if (st->efd < 0 || st->sock < 0 || bind(st->sock, (struct sockaddr *)&a, alen) != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: doorbell setup failed: %s",
                       strerror(errno));
    return cdn_modex_put(SHM_MODEX_KEY, st->segname, strlen(st->segname) + 1);
}

static int map_peer(struct shm_state *st, int i)
{
    struct shm_peer *p = &st->peers[i];
    char name[64];
    size_t len = sizeof name;
    int rc = cdn_modex_get(p->world, SHM_MODEX_KEY, name, &len);
    if (rc != MPI_SUCCESS)
        return rc;
    len = sizeof p->pid;
    rc = cdn_modex_get(p->world, CDN_MODEX_PID, &p->pid, &len);
    if (rc != MPI_SUCCESS)
        return rc;
    name[sizeof name - 1] = '\0';
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: cannot open rank %d's segment "
                       "%s: %s", p->world, name, strerror(e));
    }
    p->seglen = (size_t)sb.st_size;
    p->seg = mmap(NULL, p->seglen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p->seg == MAP_FAILED || p->seg->magic != SHM_MAGIC || (int)p->seg->nlocal != st->nlocal) {
        p->seg = NULL;
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: shm transport: rank %d's segment %s is not "
                       "usable", p->world, name);
    }
    atomic_fetch_add(&p->seg->attached, 1);
    shm_prod_open(&p->prod, &p->seg->rings[st->me]);
    shm_cons_open(&p->cons, &st->seg->rings[i]);
    return MPI_SUCCESS;
}

static int send_bell(struct shm_state *st, int i)
{
    struct sockaddr_un a;
    socklen_t alen = bell_addr(st->peers[i].pid, &a);
    int me = st->me;
    struct iovec iov = {.iov_base = &me, .iov_len = sizeof me};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr m = {.msg_name = &a, .msg_namelen = alen, .msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &st->efd, sizeof(int));
    if (sendmsg(st->sock, &m, 0) == (ssize_t)sizeof me)
        return 1;
    return (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED ||
            errno == ENOENT) ? 0 : -1;
}

static int recv_bell(struct shm_state *st)
{
    int who = -1;
    struct iovec iov = {.iov_base = &who, .iov_len = sizeof who};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                       .msg_controllen = sizeof ctl.buf};
    if (recvmsg(st->sock, &m, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof who)
        return 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (c == NULL || c->cmsg_type != SCM_RIGHTS || who < 0 || who >= st->nlocal || who == st->me)
        return 0;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (st->peers[who].efd >= 0) {
        close(fd);
        return 0;
    }
    st->peers[who].efd = fd;
    return 1;
}

int shm_seg_attach_all(struct shm_state *st)
{
    for (int i = 0; i < st->nlocal; i++) {
        if (i == st->me)
            continue;
        int rc = map_peer(st, i);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    /* Doorbell fds: send ours to everyone, collect theirs; nonblocking both
     * ways so no pair of processes can wait on each other's full queue. */
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
        while (to_recv > 0 && recv_bell(st))
            to_recv--;
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
    /* Every peer mapped every segment before sending its doorbell. */
    while (atomic_load(&st->seg->attached) < st->nlocal - 1)
        sched_yield();
    shm_unlink(st->segname);
    st->unlinked = true;
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
    if (!st->unlinked && st->segname[0])
        shm_unlink(st->segname);
    if (st->efd >= 0)
        close(st->efd);
    if (st->sock >= 0)
        close(st->sock);
}
