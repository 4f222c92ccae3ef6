/* The socket transports' interface choice and job key (see inet.h). */
#include "transport/inet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "progress/job.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/pmix.h"

/* "10.1.0.0/16" contains ip (host order)? */
static bool cidr_contains(const char *spec, uint32_t ip)
{
    const char *slash = strchr(spec, '/');
    if (slash == NULL || slash - spec >= 32)
        return false;
    char net[32];
    memcpy(net, spec, (size_t)(slash - spec));
    net[slash - spec] = '\0';
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    struct in_addr a;
    if (*end != '\0' || bits < 0 || bits > 32 || inet_pton(AF_INET, net, &a) != 1)
        return false;
    uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
    return (ntohl(a.s_addr) & mask) == (ip & mask);
}

int cdn_inet_pick_ip(const char *if_var, const char *who, struct in_addr *out)
{
    const char *spec = cdn_param_str(if_var);
    bool spans = cdn_job_local_size() < cdn_job_size();
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) != 0)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: %s: cannot list network interfaces: %s", who,
                       strerror(errno));
    bool found = false;
    for (struct ifaddrs *i = ifs; i != NULL && !found; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
            continue;
        struct in_addr a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
        bool loop = (i->ifa_flags & IFF_LOOPBACK) != 0;
        if (spec != NULL)
            found = strcmp(i->ifa_name, spec) == 0 || cidr_contains(spec, ntohl(a.s_addr));
        else
            found = spans ? !loop : loop;
        if (found)
            *out = a;
    }
    freeifaddrs(ifs);
    if (!found && spec == NULL && !spans) {
        out->s_addr = htonl(INADDR_LOOPBACK);
        found = true;
    }
    if (!found)
        return cdn_err(MPI_ERR_OTHER, "MPI_Init: %s: %s%s%s matches no IPv4 interface that is up",
                       who, spec != NULL ? if_var : "", spec != NULL ? "=" : "",
                       spec != NULL ? spec : "the job spans nodes, but no non-loopback interface");
    return MPI_SUCCESS;
}

/* The job key, the same for every transport and context: rank 0's first
 * instance makes it, the others (here and elsewhere) take it. */
static uint8_t job_key[CDN_JOB_KEY_BYTES];
static bool have_job_key;

int cdn_inet_bound_socket(int type, struct in_addr ip, struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    *sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr = ip, .sin_port = 0};
    socklen_t len = sizeof *sa;
    if (fd >= 0 && bind(fd, (struct sockaddr *)sa, sizeof *sa) == 0 &&
        (type != SOCK_STREAM || listen(fd, 1024) == 0) &&
        getsockname(fd, (struct sockaddr *)sa, &len) == 0)
        return fd;
    int e = errno;
    if (fd >= 0)
        close(fd);
    errno = e;
    return -1;
}

int cdn_job_key_publish(int me, uint8_t key[CDN_JOB_KEY_BYTES])
{
    if (me != 0)
        return MPI_SUCCESS;
    if (have_job_key) {
        memcpy(key, job_key, CDN_JOB_KEY_BYTES);
        return MPI_SUCCESS;
    }
    size_t got = 0;
    while (got < CDN_JOB_KEY_BYTES) {
        ssize_t n = getrandom(key + got, CDN_JOB_KEY_BYTES - got, 0);
        if (n < 0 && errno != EINTR)
            return cdn_err(MPI_ERR_OTHER, "MPI_Init: getrandom failed making the job key: %s",
                           strerror(errno));
        got += n > 0 ? (size_t)n : 0;
    }
    memcpy(job_key, key, CDN_JOB_KEY_BYTES);
    have_job_key = true;
    return cdn_modex_put(CDN_MODEX_JOB_KEY, key, CDN_JOB_KEY_BYTES);
}

void cdn_job_key_forget(void)
{
    have_job_key = false;
}

int cdn_job_key_fetch(int me, uint8_t key[CDN_JOB_KEY_BYTES])
{
    if (me == 0)
        return MPI_SUCCESS;
    size_t len = CDN_JOB_KEY_BYTES;
    int rc = cdn_modex_get(0, CDN_MODEX_JOB_KEY, key, &len);
    if (rc == MPI_SUCCESS && len != CDN_JOB_KEY_BYTES)
        rc = cdn_err(MPI_ERR_OTHER, "MPI_Init: rank 0's job key has %zu bytes, not %d", len,
                     CDN_JOB_KEY_BYTES);
    return rc;
}
