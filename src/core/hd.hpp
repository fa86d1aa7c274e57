#pragma once
// QGPU_HD marks functions compiled for both host and device (shared scientific arithmetic).
#ifdef __CUDACC__
#define QGPU_HD __host__ __device__
#else
#define QGPU_HD
#endif
