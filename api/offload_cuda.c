/*
 * Offload streams of info type "cudaStream_t" (api/offload.h): enqueued
 * operations are host functions launched on the application's CUDA
 * stream.  Compiled only against a CUDA runtime's cuda_runtime.h -- the
 * real one (meson option `cudart`) or the test suite's stub
 * (tests/stub/cuda, option `gpu_stub`).  Buffers must be host memory (or
 * managed memory the host may touch): Cadence does not move device memory
 * (MPIX_Query_cuda_support says 0).
 */
#include <cuda_runtime.h>
#include <string.h>

#include "api/offload.h"

static int launch(void *stream, void (*fn)(void *arg), void *arg)
{
    cudaStream_t s;
    memcpy(&s, &stream, sizeof s);
    return (int)cudaLaunchHostFunc(s, fn, arg);
}

static int synchronize(void *stream)
{
    cudaStream_t s;
    memcpy(&s, &stream, sizeof s);
    return (int)cudaStreamSynchronize(s);
}

static const char *error_text(int code)
{
    return cudaGetErrorString((cudaError_t)code);
}

static const struct cdn_offload cuda = {
    .type = "cudaStream_t",
    .handle_size = sizeof(cudaStream_t),
    .launch = launch,
    .synchronize = synchronize,
    .error_text = error_text,
};

_Static_assert(sizeof(cudaStream_t) == sizeof(void *), "a cudaStream_t is a pointer");

const struct cdn_offload *cdn_offload_find(const char *type)
{
    return strcmp(type, cuda.type) == 0 ? &cuda : NULL;
}

const char *cdn_offload_types(void)
{
    return "cudaStream_t";
}
