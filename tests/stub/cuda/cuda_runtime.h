/*
 * A stub of the CUDA runtime API for the test suite: just the stream calls
 * Cadence's "cudaStream_t" offload streams use (api/offload_cuda.c) and the
 * ones a test needs to drive them, with the real API's names, types and
 * signatures.  A stream is a host thread running launched host functions
 * one at a time in launch order, as a device stream runs its work; there
 * is no device and no device memory.  It lets the suite compile and run
 * Cadence's CUDA path on a machine without CUDA; it says nothing about a
 * real GPU.
 */
#ifndef CDN_STUB_CUDA_RUNTIME_H
#define CDN_STUB_CUDA_RUNTIME_H

typedef struct CUstream_st *cudaStream_t;

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidResourceHandle = 400,
} cudaError_t;

typedef void (*cudaHostFn_t)(void *userData);

cudaError_t cudaStreamCreate(cudaStream_t *pStream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
const char *cudaGetErrorString(cudaError_t error);

#endif
