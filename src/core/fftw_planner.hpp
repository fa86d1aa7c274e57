#pragma once
// FFTW's planner (plan creation and destruction) is not thread safe, across all of FFTW: every domain that plans
// transforms takes this one process-wide lock. Executing existing plans needs no lock.
// Also the RAII owners of double-precision FFTW buffers and plans shared by the CPU references.
#include <fftw3.h>

#include <complex>
#include <cstddef>
#include <mutex>
#include <string>

#include "core/error.hpp"

namespace qgpu {

std::mutex& fftw_planner_mutex();

// fftw_malloc'ed (SIMD-aligned) array of n values: double or fftw_complex.
template <class T> struct FftwArray {
  T* p;
  explicit FftwArray(std::size_t n) : p(static_cast<T*>(fftw_malloc(n * sizeof(T)))) {
    if (!p) throw Error("FFTW: cannot allocate " + std::to_string(n) + " values");
  }
  ~FftwArray() { fftw_free(p); }
  FftwArray(const FftwArray&) = delete;
  FftwArray& operator=(const FftwArray&) = delete;
  std::complex<double>* c() const { return reinterpret_cast<std::complex<double>*>(p); }
};
using FftwReal = FftwArray<double>;
using FftwComplex = FftwArray<fftw_complex>;

// A double-precision plan, destroyed under the planner lock.
struct FftwPlan {
  fftw_plan p = nullptr;
  FftwPlan() = default;
  FftwPlan(const FftwPlan&) = delete;
  FftwPlan& operator=(const FftwPlan&) = delete;
  ~FftwPlan() {
    if (p) {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      fftw_destroy_plan(p);
    }
  }
};

}  // namespace qgpu
