/*
 * mpirun's event loop and exit policy.  One thread (this one) owns the
 * ranks: it polls their stdout/stderr pipes, mpirun's stdin, a signalfd
 * (SIGCHLD and the signals it forwards) and an eventfd the PMIx server
 * thread writes when a rank aborts.  The job ends in one of a few ways,
 * each with its exit code: every rank finished; a rank failed (killed by a
 * signal, or exited without MPI_Finalize, or a non-MPI program exited
 * non-zero, or a program of another MPI never connected) and the others
 * are killed; MPI_Abort; --timeout; a signal to mpirun.  Killing is SIGTERM to each rank's process group, then SIGKILL
 * after a grace period, so a failed job is gone within two seconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <termios.h>
#include <unistd.h>

#include "tools/mpirun/mpirun.h"

#define LINE_MAX_BUFFERED (64 * 1024)  /* a longer line is written in pieces */
#define FAIL_GRACE_MS 800               /* SIGTERM -> SIGKILL when a rank failed */
#define SIGNAL_GRACE_MS 3000            /* SIGTERM -> SIGKILL after mpirun was signalled */
#define CONNECT_CHECK_MS 2000           /* a rank not connected by then is looked at (foreign.c) */

static struct job job;
static int exit_code = -1;            /* the first cause decides */
static bool killing;
static int64_t kill_deadline;          /* when to SIGKILL what is left */
static int64_t timeout_deadline;
static int64_t connect_deadline;
static int running;                   /* ranks not yet reaped */

/* stdin forwarding to rank 0 */
static bool stdin_open;
static char inbuf[65536];
static size_t inlen;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return;  /* our own output is gone: nothing useful to do */
        }
        p += k;
        n -= (size_t)k;
    }
}

/* Only this thread writes mpirun's stdout/stderr, so a tag and its line
 * written back to back stay together. */
static void emit(int fd, int rank, const char *p, size_t n)
{
    if (job.tag_output) {
        char tag[32];
        int t = snprintf(tag, sizeof tag, "[%d] ", rank);
        write_all(fd, tag, (size_t)t);
    }
    write_all(fd, p, n);
}

/* Write the complete lines of a rank's buffer; at EOF also the rest. */
static void flush_lines(int fd, int rank, char *buf, size_t *len, bool eof)
{
    size_t start = 0;
    for (size_t i = 0; i < *len; i++) {
        if (buf[i] == '\n') {
            emit(fd, rank, buf + start, i + 1 - start);
            start = i + 1;
        }
    }
    if ((eof || *len - start >= LINE_MAX_BUFFERED) && start < *len) {
        emit(fd, rank, buf + start, *len - start);
        start = *len;
    }
    memmove(buf, buf + start, *len - start);
    *len -= start;
}

static void read_output(struct rank *r, bool err)
{
    int *fd = err ? &r->err_fd : &r->out_fd;
    char **buf = err ? &r->errbuf : &r->outbuf;
    size_t *len = err ? &r->errlen : &r->outlen;
    if (*buf == NULL && (*buf = malloc(LINE_MAX_BUFFERED + 4096)) == NULL)
        mpirun_die("out of memory");
    ssize_t n = read(*fd, *buf + *len, LINE_MAX_BUFFERED + 4096 - *len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0) {
        *len += (size_t)n;
        flush_lines(err ? 2 : 1, r->rank, *buf, len, false);
        return;
    }
    flush_lines(err ? 2 : 1, r->rank, *buf, len, true);
    close(*fd);
    *fd = -1;
}

static void signal_all(int sig)
{
    for (int i = 0; i < job.size; i++) {
        struct rank *r = &job.ranks[i];
        if (r->state == RANK_RUNNING) {
            kill(-r->pid, sig);
            kill(r->pid, sig);
        }
    }
}

static void end_job(int code, int sig, int grace_ms)
{
    if (exit_code < 0)
        exit_code = code;
    if (!killing) {
        killing = true;
        kill_deadline = now_ms() + grace_ms;
    }
    signal_all(sig);
}

static void close_stdin_forwarding(void)
{
    stdin_open = false;
    inlen = 0;
    if (job.size > 0 && job.ranks[0].in_fd >= 0) {
        close(job.ranks[0].in_fd);
        job.ranks[0].in_fd = -1;
    }
}

/* A rank that never connected to our PMIx server: when its program loads
 * another MPI's library it runs as a singleton of that MPI, so say so and
 * end the job (returns true).  Programs without MPI are left alone. */
static bool report_foreign(struct rank *r, int code)
{
    const char *lib = mpirun_foreign_mpi(&job, r);
    if (lib == NULL)
        return false;
    fprintf(stderr, MPIRUN_NAME ": rank %d (pid %d) never connected: is it linked against "
            "another MPI? ldd shows %s; ending the job\n", r->rank, (int)r->pid, lib);
    end_job(code, SIGTERM, FAIL_GRACE_MS);
    return true;
}

/* CONNECT_CHECK_MS after the launch: look at the ranks still running
 * that have not connected. */
static void check_connected(void)
{
    connect_deadline = 0;
    for (int i = 0; i < job.size && !killing; i++) {
        struct rank *r = &job.ranks[i];
        mpirun_server_lock();
        bool connected = r->connected;
        mpirun_server_unlock();
        if (r->state == RANK_RUNNING && !connected)
            report_foreign(r, 1);
    }
}

static void rank_exited(struct rank *r, int status)
{
    r->state = RANK_EXITED;
    r->wait_status = status;
    running--;
    if (r->rank == 0)
        close_stdin_forwarding();
    mpirun_server_lock();
    bool connected = r->connected, finalized = r->finalized;
    mpirun_server_unlock();
    if (killing)
        return;  /* the job is already ending; this is a consequence */
    if (connected && !finalized)
        mpirun_server_notify_lost(&job, r->rank);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        fprintf(stderr, MPIRUN_NAME ": rank %d (pid %d) killed by signal %d (%s); "
                "ending the job\n", r->rank, (int)r->pid, sig, strsignal(sig));
        end_job(128 + sig, SIGTERM, FAIL_GRACE_MS);
        return;
    }
    int code = WEXITSTATUS(status);
    if (!connected && report_foreign(r, code != 0 ? code : 1))
        return;
    if (connected && !finalized) {
        fprintf(stderr, MPIRUN_NAME ": rank %d (pid %d) exited with status %d without "
                "calling MPI_Finalize; ending the job\n", r->rank, (int)r->pid, code);
        end_job(code != 0 ? code : 1, SIGTERM, FAIL_GRACE_MS);
    } else if (code != 0 && !finalized) {
        fprintf(stderr, MPIRUN_NAME ": rank %d (pid %d) exited with status %d; "
                "ending the job\n", r->rank, (int)r->pid, code);
        end_job(code, SIGTERM, FAIL_GRACE_MS);
    } else if (code != 0 && exit_code < 0) {
        exit_code = code;  /* after MPI_Finalize: the others finish on their own */
    }
}

/* How long a rank that left without MPI_Finalize waits to be blamed while
 * a killed rank may still be on its way to becoming a zombie. */
#define KILLED_GRACE_MS 200

/* Reap every exited rank.  When several ended before we looked, those
 * killed by a signal are reported first: waitpid(-1) returns them oldest
 * child first, not in the order they died, and a killed rank is what makes
 * the others exit (a survivor that saw the failure and left must not be
 * named as the cause).  A killed process closes its sockets before it is a
 * zombie, so a survivor that saw the close can exit and be seen first:
 * before naming a rank that left without MPI_Finalize, wait up to
 * KILLED_GRACE_MS for a killed one to show. */
static void reap(void)
{
    int64_t deadline = -1;
    for (int pass = 0; pass < 2; pass++) {
        bool blame_pending = false;
        for (int i = 0; i < job.size; i++) {
            struct rank *r = &job.ranks[i];
            if (r->state != RANK_RUNNING || r->pid <= 0)
                continue;
            siginfo_t info = {0};
            if (waitid(P_PID, (id_t)r->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
                info.si_pid != r->pid)
                continue;  /* still running */
            if (pass == 0 && info.si_code == CLD_EXITED) {
                mpirun_server_lock();
                blame_pending |= !killing && r->connected && !r->finalized;
                mpirun_server_unlock();
                continue;  /* the second pass takes it */
            }
            int status;
            if (waitpid(r->pid, &status, WNOHANG) == r->pid)
                rank_exited(r, status);
        }
        if (pass == 0 && blame_pending && !killing && running > 1) {
            if (deadline < 0)
                deadline = now_ms() + KILLED_GRACE_MS;
            if (now_ms() < deadline) {
                usleep(1000);
                pass = -1;  /* look again for a killed rank */
            }
        }
    }
}

static void check_abort(void)
{
    int rank, status;
    char msg[512];
    if (!mpirun_server_take_abort(&rank, &status, msg, sizeof msg))
        return;
    int code = status & 0xff;
    if (code == 0 && status != 0)
        code = 1;
    pid_t pid = rank >= 0 && rank < job.size ? job.ranks[rank].pid : 0;
    (void)msg;  /* the rank printed it already */
    if (!killing)
        fprintf(stderr, MPIRUN_NAME ": rank %d (pid %d) aborted the job (exit code %d)\n", rank,
                (int)pid, code);
    if (!killing)  /* the abort is the cause, whatever exited non-zero before it */
        exit_code = code;
    end_job(code, SIGTERM, FAIL_GRACE_MS);
}

static void on_signal(int sig)
{
    if (sig == SIGCHLD) {
        reap();
        return;
    }
    if (killing && sig == SIGINT) {  /* a second Ctrl-C: no more waiting */
        signal_all(SIGKILL);
        return;
    }
    fprintf(stderr, MPIRUN_NAME ": received signal %d (%s); forwarding it to %d rank%s\n", sig,
            strsignal(sig), running, running == 1 ? "" : "s");
    end_job(128 + sig, sig, SIGNAL_GRACE_MS);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void unlink_matching(const char *pattern)
{
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            unlink(g.gl_pathv[i]);
        globfree(&g);
    }
}

/* Files a rank may have left when it was killed before cleaning up: the
 * shared-memory transport names its files after the job or the rank's pid,
 * and libfabric's shm provider (transport/ofi) its regions "PID:UID:N".
 * A region left behind made a later process that got the same pid fail
 * its fi_enable with EBUSY (pids wrap at pid_max). */
static void remove_leftovers(void)
{
    if (job.tmpdir[0] != '\0')
        nftw(job.tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    char pattern[320];
    snprintf(pattern, sizeof pattern, "/dev/shm/cadence.%s.*", job.nspace);
    unlink_matching(pattern);
    for (int i = 0; i < job.size; i++) {
        if (job.ranks == NULL || job.ranks[i].pid <= 0)
            continue;
        snprintf(pattern, sizeof pattern, "/dev/shm/cadence.%d", (int)job.ranks[i].pid);
        unlink(pattern);
        snprintf(pattern, sizeof pattern, "/dev/shm/cadence.%d.*", (int)job.ranks[i].pid);
        unlink_matching(pattern);
        snprintf(pattern, sizeof pattern, "/dev/shm/%d:%u:*", (int)job.ranks[i].pid,
                 (unsigned)getuid());
        unlink_matching(pattern);
    }
}

static bool want_stdin(void)
{
    /* a background job must not steal the terminal (and stop on SIGTTIN) */
    if (isatty(0) && tcgetpgrp(0) != getpgrp())
        return false;
    return true;
}

static void pump_stdin(short revents_in, short revents_out)
{
    struct rank *r0 = &job.ranks[0];
    if (revents_in && inlen == 0) {
        ssize_t n = read(0, inbuf, sizeof inbuf);
        if (n > 0)
            inlen = (size_t)n;
        else if (n == 0 || (errno != EAGAIN && errno != EINTR))
            stdin_open = false;
    }
    if (revents_out && inlen > 0 && r0->in_fd >= 0) {
        ssize_t n = write(r0->in_fd, inbuf, inlen);
        if (n > 0) {
            memmove(inbuf, inbuf + n, inlen - (size_t)n);
            inlen -= (size_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            close_stdin_forwarding();  /* rank 0 closed its stdin */
        }
    }
    if (!stdin_open && inlen == 0 && r0->in_fd >= 0) {
        close(r0->in_fd);
        r0->in_fd = -1;
    }
}

static void loop(int sfd, int efd)
{
    size_t cap = 3 + 2 * (size_t)job.size;
    struct pollfd *pfd = calloc(cap, sizeof *pfd);
    struct rank **who = calloc(cap, sizeof *who);
    if (pfd == NULL || who == NULL)
        mpirun_die("out of memory");
    int64_t drain_deadline = -1;
    for (;;) {
        int open_fds = 0;
        size_t n = 0;
        pfd[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = efd, .events = POLLIN};
        size_t stdin_at = n;
        struct rank *r0 = &job.ranks[0];
        pfd[n++] = (struct pollfd){
            .fd = stdin_open && inlen == 0 ? 0 : (inlen > 0 && r0->in_fd >= 0 ? r0->in_fd : -1),
            .events = stdin_open && inlen == 0 ? POLLIN : POLLOUT};
        for (int i = 0; i < job.size; i++) {
            struct rank *r = &job.ranks[i];
            if (r->out_fd >= 0) {
                who[n] = r;
                pfd[n++] = (struct pollfd){.fd = r->out_fd, .events = POLLIN};
                open_fds++;
            }
            if (r->err_fd >= 0) {
                who[n] = r;
                pfd[n++] = (struct pollfd){.fd = r->err_fd, .events = POLLIN};
                open_fds++;
            }
        }
        int64_t now = now_ms();
        if (running == 0) {
            /* all reaped: drain what the pipes still hold, briefly */
            if (open_fds == 0)
                break;
            if (drain_deadline < 0)
                drain_deadline = now + 1000;
            if (now >= drain_deadline)
                break;
        }
        int64_t wake = -1;
        if (killing && running > 0)
            wake = kill_deadline;
        if (timeout_deadline > 0 && !killing)
            wake = wake < 0 || timeout_deadline < wake ? timeout_deadline : wake;
        if (connect_deadline > 0 && !killing)
            wake = wake < 0 || connect_deadline < wake ? connect_deadline : wake;
        if (drain_deadline >= 0)
            wake = wake < 0 || drain_deadline < wake ? drain_deadline : wake;
        int ms = wake < 0 ? -1 : (int)(wake > now ? wake - now : 0);
        int k = poll(pfd, n, ms);
        if (k < 0 && errno != EINTR)
            mpirun_die("poll: %s", strerror(errno));
        now = now_ms();
        if (pfd[1].revents & POLLIN) {
            uint64_t v;
            ssize_t rd = read(efd, &v, sizeof v);
            (void)rd;
        }
        check_abort();  /* before reaping: an aborting rank exits right after */
        if (pfd[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == sizeof si)
                on_signal((int)si.ssi_signo);
        }
        if (pfd[stdin_at].fd >= 0 && pfd[stdin_at].revents) {
            bool in = pfd[stdin_at].fd == 0;
            pump_stdin(in ? pfd[stdin_at].revents : 0, in ? 0 : pfd[stdin_at].revents);
        }
        for (size_t i = stdin_at + 1; i < n; i++) {
            if (pfd[i].revents == 0)
                continue;
            struct rank *r = who[i];
            read_output(r, pfd[i].fd == r->err_fd);
        }
        if (killing && running > 0 && now >= kill_deadline) {
            signal_all(SIGKILL);
            kill_deadline = now + 1000;
        }
        if (connect_deadline > 0 && !killing && now >= connect_deadline)
            check_connected();
        if (timeout_deadline > 0 && !killing && now >= timeout_deadline) {
            fprintf(stderr, MPIRUN_NAME ": the job ran longer than --timeout %g s; killing "
                    "%d rank%s still running\n", job.timeout, running, running == 1 ? "" : "s");
            end_job(124, SIGTERM, FAIL_GRACE_MS);
        }
    }
    free(pfd);
    free(who);
}

/* A closed stdin/stdout/stderr would be reused by the next open() and then
 * mistaken for it: park /dev/null there.  Returns whether stdin was open. */
static bool guard_std_fds(void)
{
    bool stdin_was_open = fcntl(0, F_GETFD) >= 0;
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0)
            continue;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
    return stdin_was_open;
}

static void cleanup_at_exit(void)
{
    remove_leftovers();
}

int main(int argc, char **argv)
{
    bool have_stdin = guard_std_fds();
    signal(SIGPIPE, SIG_IGN);
    mpirun_parse(argc, argv, &job);
    job.ranks = calloc((size_t)job.size, sizeof *job.ranks);
    if (job.ranks == NULL)
        mpirun_die("out of memory");
    for (int a = 0; a < job.napps; a++)
        for (int k = 0; k < job.apps[a].nprocs; k++) {
            struct rank *r = &job.ranks[job.apps[a].first_rank + k];
            r->rank = job.apps[a].first_rank + k;
            r->app = a;
            r->out_fd = r->err_fd = r->in_fd = -1;
        }
    snprintf(job.nspace, sizeof job.nspace, "mpirun.%d", (int)getpid());
    const char *tmp = getenv("TMPDIR");
    snprintf(job.tmpdir, sizeof job.tmpdir, "%s/cadence-mpirun.XXXXXX",
             tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
    if (mkdtemp(job.tmpdir) == NULL)
        mpirun_die("cannot create a directory in %s: %s", tmp ? tmp : "/tmp", strerror(errno));
    atexit(cleanup_at_exit);  /* also when a later check dies */

    /* block the signals we handle before PMIx starts threads: they inherit the mask */
    sigset_t set;
    sigemptyset(&set);
    int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&set, sigs[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (sfd < 0 || efd < 0)
        mpirun_die("cannot set up signal handling: %s", strerror(errno));

    int rc = 2;
    if (mpirun_server_start(&job, efd) != 0)
        goto out;
    if (mpirun_plan_binding(&job) != 0 || mpirun_server_register(&job) != 0
        || mpirun_prepare(&job) != 0)
        goto stop;
    stdin_open = have_stdin && want_stdin();
    if (stdin_open)
        fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    if (job.timeout > 0)
        timeout_deadline = now_ms() + (int64_t)(job.timeout * 1000);
    for (int i = 0; i < job.size; i++) {
        if (mpirun_spawn(&job, &job.ranks[i], i == 0 && stdin_open) != 0) {
            fprintf(stderr, MPIRUN_NAME ": cannot start rank %d: %s\n", i, strerror(errno));
            end_job(1, SIGKILL, 0);
            break;
        }
        running++;
    }
    if (stdin_open && job.ranks[0].in_fd < 0)
        stdin_open = false;
    connect_deadline = now_ms() + CONNECT_CHECK_MS;
    loop(sfd, efd);
    rc = exit_code < 0 ? 0 : exit_code;
stop:
    mpirun_server_stop(&job);
out:
    return rc;  /* cleanup_at_exit removes what the job left */
}
