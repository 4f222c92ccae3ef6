/*
 * TCP connections (see tcp.h): the listening socket on the chosen
 * interface, the job key, lazy connects, the handshake on both sides with
 * its deadline, and what happens when a peer disappears.
 *
 * Interface: CADENCE_TCP_IF names one (e.g. eth0) or a CIDR block (e.g.
 * 10.1.0.0/16); by default loopback when the whole job is on this node,
 * else the first non-loopback IPv4 interface that is up.
 *
 * Authentication: rank 0 draws a 32-byte key from getrandom() and
 * publishes it through PMIx before MPI_Init's fence; a connecting process
 * must present it in its HELLO.  A socket that does not, within
 * CADENCE_TCP_AUTH_TIMEOUT milliseconds, or sends anything malformed, is
 * closed and logged (never the key) and the job goes on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "progress/job.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/pmix.h"
#include "transport/inet.h"
#include "transport/tcp/tcp.h"

uint64_t tcp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void epoll_add(struct tcp_state *st, int fd, uint32_t events, void *ptr)
{
    struct epoll_event ev = {.events = events, .data.ptr = ptr};
    epoll_ctl(st->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int tcp_listen(struct tcp_state *st)
{
    struct in_addr ip;
    int rc = cdn_inet_pick_ip("CADENCE_TCP_IF", "tcp", &ip);
    if (rc != MPI_SUCCESS)
        return rc;
    st->epfd = epoll_create1(EPOLL_CLOEXEC);
    st->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct sockaddr_in sa;
    st->listen_fd = cdn_inet_bound_socket(SOCK_STREAM, ip, &sa);
    if (st->epfd < 0 || st->timer_fd < 0 || st->listen_fd < 0) {
        char ipstr[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &ip, ipstr, sizeof ipstr);
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: tcp: cannot listen on %s: %s", ipstr,
                       strerror(errno));
    }
    st->listen_ep = EP_LISTEN;
    st->timer_ep = EP_TIMER;
    epoll_add(st, st->listen_fd, EPOLLIN, &st->listen_ep);
    epoll_add(st, st->timer_fd, EPOLLIN, &st->timer_ep);
    st->addr.ip = sa.sin_addr.s_addr;
    st->addr.port = sa.sin_port;
    char key[64];
    cdn_transport_modex_key(&st->tp, CDN_MODEX_TCP_ADDR, key, sizeof key);
    return cdn_modex_put(key, &st->addr, sizeof st->addr);
}

static struct tcp_conn *conn_new(struct tcp_state *st, int fd, int role, int peer)
{
    struct tcp_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->ep = EP_CONN;
    c->fd = fd;
    c->role = role;
    c->peer = peer;
    pthread_mutex_lock(&st->conns_lock);
    c->next = st->conns;
    st->conns = c;
    pthread_mutex_unlock(&st->conns_lock);
    return c;
}

/* The socket is finished with: closed unless its fd went to a peer. */
static void conn_kill(struct tcp_conn *c, bool close_fd)
{
    if (close_fd && c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->role = CONN_DEAD;
}

static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int tcp_connect(struct tcp_state *st, struct tcp_peer *p)
{
    struct tcp_addr a;
    size_t len = sizeof a;
    char key[64];
    cdn_transport_modex_key(&st->tp, CDN_MODEX_TCP_ADDR, key, sizeof key);
    int rc = cdn_modex_get(p->fp.world, key, &a, &len);
    if (rc != MPI_SUCCESS)
        return rc;
    if (len != sizeof a)
        return cdn_err(MPI_ERR_OTHER, "tcp: rank %d published a %zu-byte address", p->fp.world, len);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cdn_err(MPI_ERR_OTHER, "tcp: cannot open a socket to rank %d: %s", p->fp.world,
                       strerror(errno));
    set_nodelay(fd);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = a.port, .sin_addr.s_addr = a.ip};
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        return cdn_err(MPI_ERR_OTHER, "tcp: cannot connect to rank %d: %s", p->fp.world,
                       strerror(e));
    }
    struct tcp_conn *c = conn_new(st, fd, CONN_CONNECTING, p->fp.world);
    if (c == NULL) {
        close(fd);
        return cdn_err(MPI_ERR_NO_MEM, "tcp: out of memory connecting to rank %d", p->fp.world);
    }
    p->out = c;
    p->state = PEER_CONNECTING;
    epoll_add(st, fd, EPOLLOUT, c);
    return MPI_SUCCESS;
}

static void arm_timer(struct tcp_state *st, uint64_t deadline)
{
    uint64_t now = tcp_now_ms(), in = deadline > now ? deadline - now : 1;
    struct itimerspec it = {.it_value = {(time_t)(in / 1000), (long)(in % 1000) * 1000000L}};
    timerfd_settime(st->timer_fd, 0, &it, NULL);
}

void tcp_accept_all(struct tcp_state *st)
{
    for (;;) {
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        int fd = accept4(st->listen_fd, (struct sockaddr *)&sa, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;  /* EAGAIN, or a connection that went away before we took it */
        set_nodelay(fd);
        struct tcp_conn *c = conn_new(st, fd, CONN_AUTH, -1);
        if (c == NULL) {
            close(fd);
            continue;
        }
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
        snprintf(c->from, sizeof c->from, "%s:%u", ip, (unsigned)ntohs(sa.sin_port));
        c->deadline_ms = tcp_now_ms() + (uint64_t)st->auth_ms;
        epoll_add(st, fd, EPOLLIN, c);
        arm_timer(st, c->deadline_ms);
    }
}

static void reject(struct tcp_state *st, struct tcp_conn *c, const char *why)
{
    fprintf(stderr, "cadence: rank %d: tcp: closed a connection from %s: %s\n", st->me, c->from,
            why);
    conn_kill(c, true);
}

static bool send_all(int fd, const void *buf, size_t len)
{
    const char *b = buf;
    while (len > 0) {
        ssize_t n = send(fd, b, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        b += n;
        len -= (size_t)n;
    }
    return true;
}

/* Read what the handshake still needs; returns false on EOF or an error. */
static bool conn_read(struct tcp_conn *c)
{
    while (c->got < sizeof c->buf) {
        ssize_t n = recv(c->fd, (char *)&c->buf + c->got, sizeof c->buf - c->got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        if (n <= 0)
            return false;
        c->got += (size_t)n;
    }
    return true;
}

/* An incoming socket said who it is: take it as the peer's connection
 * unless our own attempt to the peer wins (the lower rank's does). */
static void authenticate(struct tcp_state *st, struct tcp_conn *c)
{
    if (!conn_read(c)) {
        reject(st, c, c->got == 0 ? "closed without a hello" : "closed within its hello");
        return;
    }
    if (c->got >= sizeof(uint32_t) && c->buf.magic != TCP_MAGIC) {
        reject(st, c, "not a Cadence connection (bad magic)");
        return;
    }
    if (c->got < sizeof c->buf)
        return;
    const char *why;
    int rank;
    if (!cdn_tcp_hello_check(&c->buf, st->key, st->size, st->me, &rank, &why)) {
        reject(st, c, why);
        return;
    }
    struct tcp_peer *p = &st->peers[rank];
    struct tcp_hello reply = {.magic = TCP_MAGIC, .version = TCP_VERSION, .rank = st->me};
    pthread_mutex_lock(&p->fp.lock);
    bool take = p->state == PEER_NONE || (p->state == PEER_CONNECTING && rank < st->me);
    reply.kind = take ? TCP_ACCEPT : TCP_REJECT;
    if (!send_all(c->fd, &reply, sizeof reply)) {
        take = false;
    } else if (take) {
        int fd = c->fd;
        conn_kill(c, false);
        tcp_peer_up(st, p, fd);
    }
    pthread_mutex_unlock(&p->fp.lock);
    if (!take)
        conn_kill(c, true);
}

/* Our connection attempt progressed. */
static void connecting(struct tcp_state *st, struct tcp_conn *c, uint32_t events)
{
    struct tcp_peer *p = &st->peers[c->peer];
    const char *failed = NULL;
    char why[160];
    if (c->role == CONN_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        struct tcp_hello h = {.magic = TCP_MAGIC, .version = TCP_VERSION, .kind = TCP_HELLO,
                              .rank = st->me};
        memcpy(h.key, st->key, sizeof h.key);
        if (err != 0) {
            snprintf(why, sizeof why, "cannot connect: %s", strerror(err));
            failed = why;
        } else if (!send_all(c->fd, &h, sizeof h)) {
            snprintf(why, sizeof why, "cannot send the hello: %s", strerror(errno));
            failed = why;
        } else {
            c->role = CONN_HELLO_SENT;
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
            epoll_ctl(st->epfd, EPOLL_CTL_MOD, c->fd, &ev);
            return;
        }
    } else {
        if (!conn_read(c)) {
            failed = "the connection closed during the handshake";
        } else if (c->got < sizeof c->buf) {
            return;
        } else {
            const char *bad;
            int kind = cdn_tcp_reply_check(&c->buf, &bad);
            if (kind == 0)
                cdn_rt_abort(1, "cadence: rank %d: tcp: rank %d answered our connection with "
                             "a malformed reply (%s); ending the job", st->me, c->peer, bad);
            pthread_mutex_lock(&p->fp.lock);
            if (p->out == c)
                p->out = NULL;
            if (kind == TCP_ACCEPT && p->state == PEER_CONNECTING) {
                int fd = c->fd;
                conn_kill(c, false);
                tcp_peer_up(st, p, fd);
            } else {
                conn_kill(c, true);  /* the peer's own connection is (or will be) the one */
            }
            pthread_mutex_unlock(&p->fp.lock);
            return;
        }
    }
    pthread_mutex_lock(&p->fp.lock);
    if (p->out == c)
        p->out = NULL;
    bool fatal = p->state == PEER_CONNECTING;
    conn_kill(c, true);
    pthread_mutex_unlock(&p->fp.lock);
    if (fatal)
        tcp_peer_failed(st, p, failed);
}

void tcp_conn_event(struct tcp_state *st, struct tcp_conn *c, uint32_t events)
{
    if (c->role == CONN_AUTH)
        authenticate(st, c);
    else if (c->role == CONN_CONNECTING || c->role == CONN_HELLO_SENT)
        connecting(st, c, events);
}

void tcp_conns_expire(struct tcp_state *st)
{
    uint64_t now = tcp_now_ms(), next = 0;
    uint64_t v;
    if (read(st->timer_fd, &v, sizeof v) < 0) {
        /* EAGAIN: not expired yet; the deadlines are checked anyway */
    }
    pthread_mutex_lock(&st->conns_lock);
    struct tcp_conn *list = st->conns;
    pthread_mutex_unlock(&st->conns_lock);
    /* new sockets go to the head, so the rest of the list stays ours to walk */
    for (struct tcp_conn *c = list; c != NULL; c = c->next) {
        if (c->role != CONN_AUTH)
            continue;
        if (c->deadline_ms <= now)
            reject(st, c, "no valid hello within CADENCE_TCP_AUTH_TIMEOUT");
        else if (next == 0 || c->deadline_ms < next)
            next = c->deadline_ms;
    }
    if (next != 0)
        arm_timer(st, next);
}

void tcp_conns_reap(struct tcp_state *st)
{
    pthread_mutex_lock(&st->conns_lock);
    for (struct tcp_conn **link = &st->conns; *link != NULL;) {
        struct tcp_conn *c = *link;
        if (c->role == CONN_DEAD) {
            *link = c->next;
            free(c);
        } else {
            link = &c->next;
        }
    }
    pthread_mutex_unlock(&st->conns_lock);
}

void tcp_conns_close_all(struct tcp_state *st)
{
    pthread_mutex_lock(&st->conns_lock);
    while (st->conns != NULL) {
        struct tcp_conn *c = st->conns;
        st->conns = c->next;
        conn_kill(c, true);
        free(c);
    }
    pthread_mutex_unlock(&st->conns_lock);
}

void tcp_peer_failed(struct tcp_state *st, struct tcp_peer *p, const char *why)
{
    struct tcp_failed f;
    pthread_mutex_lock(&p->fp.lock);
    if (p->state == PEER_FAILED || p->state == PEER_GONE) {
        pthread_mutex_unlock(&p->fp.lock);
        return;
    }
    p->state = PEER_FAILED;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    if (p->out != NULL)
        conn_kill(p->out, true);
    p->out = NULL;
    tcp_take_all(st, p, &f);
    pthread_mutex_unlock(&p->fp.lock);
    p->body = NULL;
    p->rx_off = p->rx_len = 0;
    fprintf(stderr, "cadence: rank %d: tcp: lost rank %d (%s); operations with it fail with "
            "MPIX_ERR_PROC_FAILED\n", st->me, p->fp.world, why);
    int err = cdn_err(MPIX_ERR_PROC_FAILED, "rank %d failed: %s", p->fp.world, why);
    tcp_fail_all(&f, err);
    cdn_p2p_peer_failed(&st->tp, p->fp.world, err);
}
