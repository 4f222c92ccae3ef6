/*
 * What the engine needs to know about the job: this process's world rank
 * and size, and which ranks share its node (filled by the PMIx wire-up,
 * runtime/pmix.c; a singleton is alone on its node).
 */
#ifndef CDN_JOB_H
#define CDN_JOB_H

#include "runtime/runtime.h"

static inline int cdn_job_rank(void) { return cdn_rt.world_rank; }
static inline int cdn_job_size(void) { return cdn_rt.world_size; }
static inline int cdn_job_local_rank(void) { return cdn_rt.local_rank; }
static inline int cdn_job_local_size(void) { return cdn_rt.local_size; }
static inline const int *cdn_job_local_peers(void) { return cdn_rt.local_peers; }

#endif
