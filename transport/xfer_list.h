/*
 * The lists a transport keeps of the transfers waiting for a peer (sends
 * waiting for a CTS, a FIN or an ACK; receives waiting for data), linked
 * by cdn_xfer.next.  A transfer is found by the cookie its peer echoes,
 * its address: a cookie from the wire is used only once it is found here,
 * so a bad peer cannot make a transport touch a stray pointer.  The lists
 * are short (what is in flight with one peer); the caller holds the lock
 * that guards the list.
 */
#ifndef CDN_XFER_LIST_H
#define CDN_XFER_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

static inline void cdn_xfer_push(struct cdn_xfer **head, struct cdn_xfer *x)
{
    x->next = *head;
    *head = x;
}

/* The link that points at the transfer cookie names, or the list's
 * terminating NULL. */
static inline struct cdn_xfer **cdn_xfer_link(struct cdn_xfer **head, uint64_t cookie)
{
    while (*head != NULL && (uint64_t)(uintptr_t)*head != cookie)
        head = &(*head)->next;
    return head;
}

static inline struct cdn_xfer *cdn_xfer_find(struct cdn_xfer *head, uint64_t cookie)
{
    return *cdn_xfer_link(&head, cookie);
}

static inline void cdn_xfer_remove(struct cdn_xfer **head, struct cdn_xfer *x)
{
    struct cdn_xfer **link = cdn_xfer_link(head, (uint64_t)(uintptr_t)x);
    if (*link != NULL)
        *link = x->next;
    x->next = NULL;
}

/* Take the transfer cookie names off the list when its state is want (0:
 * any state); NULL when it is not there or waits for something else. */
static inline struct cdn_xfer *cdn_xfer_take(struct cdn_xfer **head, uint64_t cookie, int want)
{
    struct cdn_xfer **link = cdn_xfer_link(head, cookie), *x = *link;
    if (x == NULL || (want != 0 && x->state != want))
        return NULL;
    *link = x->next;
    x->next = NULL;
    return x;
}

#endif
