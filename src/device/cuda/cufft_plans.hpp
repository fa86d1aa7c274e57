#pragma once
// The one owner of cuFFT plans for single 2D transforms that requests repeat (iDPC in `qgpu serve`, fits): a
// process-wide pool per (device, shape, type). A LeasedPlan takes a free plan from the pool (or makes one: the
// first time costs milliseconds) and gives it back at the end of its scope, so any thread reuses the plans of
// earlier requests (the service answers on a pool of 64 connection threads: per-thread plans were made anew on
// most requests). A plan is used by one lease at a time; the pool holds as many as were ever leased at once,
// kept for the process's life. Plans run on the default stream.
#include <cufft.h>

namespace qgpu {

class LeasedPlan {
 public:
  // Plan for an nr x nc transform of `type` on the current device.
  LeasedPlan(int nr, int nc, cufftType type);
  ~LeasedPlan();
  LeasedPlan(const LeasedPlan&) = delete;
  LeasedPlan& operator=(const LeasedPlan&) = delete;
  cufftHandle get() const { return handle_; }

 private:
  int device_ = 0, nr_ = 0, nc_ = 0, type_ = 0;
  cufftHandle handle_ = 0;
};

}  // namespace qgpu
