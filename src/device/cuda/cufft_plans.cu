#include <cuda_runtime.h>

#include <map>
#include <tuple>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_plans.hpp"

namespace qgpu {

namespace {

struct ThreadPlans {
  std::map<std::tuple<int, int, int, int>, cufftHandle> plans;  // (device, nr, nc, type)
  ~ThreadPlans() {
    for (auto& [key, h] : plans) cufftDestroy(h);  // at thread exit; errors (CUDA already torn down) ignored
  }
};

}  // namespace

cufftHandle cached_plan_2d(int nr, int nc, cufftType type) {
  thread_local ThreadPlans cache;
  int device = 0;
  QGPU_CUDA(cudaGetDevice(&device));
  const auto key = std::make_tuple(device, nr, nc, int(type));
  if (const auto it = cache.plans.find(key); it != cache.plans.end()) return it->second;
  cufftHandle h = 0;
  QGPU_CUFFT(cufftPlan2d(&h, nr, nc, type));
  cache.plans.emplace(key, h);
  return h;
}

}  // namespace qgpu
