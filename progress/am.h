/*
 * Active messages: small control messages for a handler the engine
 * registered under an id, carried by whichever transport reaches the peer
 * (transport op am_send), in order with that peer's other messages.
 * Cancel and one-sided operations (progress/rma.c) use them.
 */
#ifndef CDN_AM_H
#define CDN_AM_H

#include <stddef.h>

#include "transport/transport.h"

/* Handler ids.  An id names the same handler in every process of a job. */
enum cdn_am_id {
    CDN_AM_CANCEL = 1,   /* drop a still-unmatched message (progress/p2p.c) */
    CDN_AM_CANCELLED,    /* ... it was dropped: the send completes cancelled */
    CDN_AM_TEST,         /* free for tests of the contract (tests/mpi/t_contract.c) */
    CDN_AM_RMA_PUT,      /* one-sided operations (progress/rma.c) */
    CDN_AM_RMA_ACC,
    CDN_AM_RMA_GET,
    CDN_AM_RMA_DATA,
    CDN_AM_RMA_ACK,
    CDN_AM_RMA_LOCK,
    CDN_AM_RMA_UNLOCK,
    CDN_AM_RMA_GACC,
    CDN_AM_RMA_CAS,
    CDN_AM_RMA_POST,
    CDN_AM_RMA_COMPLETE,
    CDN_AM_MAX = 32
};

/* Runs in whichever thread polls the transport, outside its locks; data
 * is valid only during the call. */
typedef void (*cdn_am_handler)(struct cdn_transport *tp, int peer, const void *data, size_t len);

/* Set the handler of id (before messages for it can arrive: at init). */
void cdn_am_register(unsigned id, cdn_am_handler h);
/* Send len bytes to world rank peer for its handler id over tp (NULL:
 * the transport reaching peer).  MPI_ERR_OTHER when none reaches it or
 * len is over its am_max. */
int cdn_am_send(struct cdn_transport *tp, int peer, unsigned id, const void *data, size_t len);

/* The engine's own handlers (progress/p2p.c). */
void cdn_p2p_am_register(void);

#endif
