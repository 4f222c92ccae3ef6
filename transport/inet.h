/*
 * What the socket transports (tcp/, udp/) share: the IPv4 interface a
 * transport binds to, and the job key that authenticates their traffic.
 *
 * The job key: rank 0's first instance draws CDN_JOB_KEY_BYTES from
 * getrandom() and publishes them through the PMIx modex before MPI_Init's
 * fence; every other process fetches them after it.  TCP presents the key
 * in its handshake, UDP keys a MAC on every datagram with it.  One key per
 * job, whichever transports and contexts use it.
 */
#ifndef CDN_TRANSPORT_INET_H
#define CDN_TRANSPORT_INET_H

#include <netinet/in.h>
#include <stdint.h>

#define CDN_JOB_KEY_BYTES 32
#define CDN_MODEX_JOB_KEY "cdn.jobkey"  /* rank 0's random key, CDN_JOB_KEY_BYTES */

/* The address to bind to: the interface or CIDR block named by the
 * environment variable if_var (e.g. CADENCE_TCP_IF), else loopback when
 * the whole job is on this node, else the first non-loopback IPv4
 * interface that is up.  who names the transport in errors. */
int cdn_inet_pick_ip(const char *if_var, const char *who, struct in_addr *out);
/* A non-blocking socket of type (SOCK_STREAM: listening too, SOCK_DGRAM)
 * bound to an ephemeral port of ip; *sa gets its address.  The fd, or -1
 * with errno set (nothing left open). */
int cdn_inet_bound_socket(int type, struct in_addr ip, struct sockaddr_in *sa);

/* Rank 0 (me): make the key (once per job) and publish it; others: nothing. */
int cdn_job_key_publish(int me, uint8_t key[CDN_JOB_KEY_BYTES]);
/* Others: fetch rank 0's key (after the fence); rank 0: nothing. */
int cdn_job_key_fetch(int me, uint8_t key[CDN_JOB_KEY_BYTES]);
/* The job ends here (a context 0 instance finalizes): a later job makes a new key. */
void cdn_job_key_forget(void);

#endif
