#pragma once
// QGPU_HD marks functions compiled for both host and device (shared scientific arithmetic).
#ifdef __CUDACC__
#define QGPU_HD __host__ __device__
#else
#define QGPU_HD
#endif

// Always-inlined function compiled for both host and device.
#ifdef __CUDACC__
#define QGPU_HD_INLINE __host__ __device__ __forceinline__
#else
#define QGPU_HD_INLINE [[gnu::always_inline]] inline
#endif
