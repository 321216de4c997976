// HYCC_HD marks small functions shared by the CPU and CUDA paths (per-element and per-block
// codec logic), so the CPU tests exercise exactly the code the GPU runs.
#pragma once

#if defined(__CUDACC__)
#define HYCC_HD __host__ __device__
#else
#define HYCC_HD
#endif
