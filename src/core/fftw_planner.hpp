#pragma once
// FFTW's planner (plan creation and destruction) is not thread safe, across all of FFTW: every domain that plans
// transforms takes this one process-wide lock. Executing existing plans needs no lock.
#include <mutex>

namespace qgpu {

std::mutex& fftw_planner_mutex();

}  // namespace qgpu
