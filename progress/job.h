/*
 * What the engine needs to know about the job: this process's world rank
 * and size, and which ranks share its node.  Until the launcher's wire-up
 * (issue [Launch]) fills cdn_rt with the node layout, every rank is alone on
 * its node; then these read cdn_rt.local_rank/local_size/local_peers.
 */
#ifndef CDN_JOB_H
#define CDN_JOB_H

#include "runtime/runtime.h"

static inline int cdn_job_rank(void) { return cdn_rt.world_rank; }
static inline int cdn_job_size(void) { return cdn_rt.world_size; }
static inline int cdn_job_local_rank(void) { return 0; }
static inline int cdn_job_local_size(void) { return 1; }
static inline const int *cdn_job_local_peers(void) { return &cdn_rt.world_rank; }

#endif
