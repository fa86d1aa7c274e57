#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_plans.hpp"

namespace qgpu {

namespace {

using Key = std::tuple<int, int, int, int>;  // (device, nr, nc, type)

struct PlanPool {
  std::mutex m;
  std::map<Key, std::vector<cufftHandle>> free;
};

// Never destroyed: the plans outlive every caller (no cufftDestroy after the CUDA runtime is torn down at exit).
PlanPool& pool() {
  static PlanPool* p = new PlanPool;
  return *p;
}

}  // namespace

LeasedPlan::LeasedPlan(int nr, int nc, cufftType type) : nr_(nr), nc_(nc), type_(int(type)) {
  QGPU_CUDA(cudaGetDevice(&device_));
  const Key key{device_, nr_, nc_, type_};
  {
    std::lock_guard<std::mutex> lock(pool().m);
    auto it = pool().free.find(key);
    if (it != pool().free.end() && !it->second.empty()) {
      handle_ = it->second.back();
      it->second.pop_back();
      return;
    }
  }
  QGPU_CUFFT(cufftPlan2d(&handle_, nr, nc, type));  // outside the lock: planning takes milliseconds
}

LeasedPlan::~LeasedPlan() {
  std::lock_guard<std::mutex> lock(pool().m);
  pool().free[Key{device_, nr_, nc_, type_}].push_back(handle_);
}

}  // namespace qgpu
