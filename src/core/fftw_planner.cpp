#include "core/fftw_planner.hpp"

namespace qgpu {

std::mutex& fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace qgpu
