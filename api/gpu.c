/*
 * MPICH's GPU support queries, for programs built for MPICH that ask before
 * handing device memory to MPI.  Cadence moves host memory only, so every
 * answer is an honest 0 (unsupported); the queries touch no MPI state and
 * may be made before MPI_Init, as such checks usually are.
 */
#include "api/entry.h"
#include "cdn_api_impl.h"

int cdn_MPIX_GPU_query_support(int gpu_type, int *is_supported)
{
    if (is_supported == NULL)
        return cdn_err(MPI_ERR_ARG, "MPIX_GPU_query_support: is_supported is NULL");
    *is_supported = 0;
    if (gpu_type != MPIX_GPU_SUPPORT_CUDA && gpu_type != MPIX_GPU_SUPPORT_ZE &&
        gpu_type != MPIX_GPU_SUPPORT_HIP)
        return cdn_err(MPI_ERR_ARG, "MPIX_GPU_query_support: gpu_type %d is none of "
                       "MPIX_GPU_SUPPORT_CUDA (%d), _ZE (%d), _HIP (%d)", gpu_type,
                       MPIX_GPU_SUPPORT_CUDA, MPIX_GPU_SUPPORT_ZE, MPIX_GPU_SUPPORT_HIP);
    return MPI_SUCCESS;
}

int cdn_MPIX_Query_cuda_support(void)
{
    return 0;
}

int cdn_MPIX_Query_ze_support(void)
{
    return 0;
}

int cdn_MPIX_Query_hip_support(void)
{
    return 0;
}
