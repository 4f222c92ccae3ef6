/*
 * Offload runtimes behind MPIX streams with an info "type" other than
 * Cadence's host queue: the GPU stream types (seed 003's enqueue
 * semantics).  An offload stream runs enqueued MPI operations in its own
 * order by launching a host function on the device stream for each
 * (cudaLaunchHostFunc): the function runs on the runtime's callback
 * thread once everything enqueued before it on that stream -- kernels
 * included -- has finished, and performs the operation there.
 *
 * api/offload_cuda.c implements "cudaStream_t" against the CUDA runtime
 * API; it is compiled into the library only when the CUDA runtime's header
 * and library are found (meson option `cudart`), and the test suite compiles
 * the same file against a stub runtime (tests/stub/cuda, option
 * `gpu_stub`).  Without CUDA, api/offload_none.c knows no type.
 */
#ifndef CDN_API_OFFLOAD_H
#define CDN_API_OFFLOAD_H

#include <stddef.h>

struct cdn_offload {
    const char *type;  /* the info "type" value, e.g. "cudaStream_t" */
    /* the size of the stream handle the info "value" key carries (in
     * MPIX_Info_set_hex's encoding) */
    size_t handle_size;
    /* Run fn(arg) on the host after everything launched on `stream` before
     * it; 0 on success, else the runtime's error code. */
    int (*launch)(void *stream, void (*fn)(void *arg), void *arg);
    /* Wait until everything launched on `stream` has run. */
    int (*synchronize)(void *stream);
    /* The runtime's text for one of its error codes. */
    const char *(*error_text)(int code);
};

/* The offload runtime for an info "type", or NULL when this build has none. */
const struct cdn_offload *cdn_offload_find(const char *type);
/* The types this build has, for messages: "" when none. */
const char *cdn_offload_types(void);

#endif
