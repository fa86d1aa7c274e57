#pragma once
// The one owner of cuFFT plans for single 2D transforms: made once per (calling thread, device, shape, type) and
// kept for the thread's life, so repeated transforms of one size (iDPC and the SSB slider in `qgpu serve`, fits)
// pay the plan creation (milliseconds) only the first time. A plan is used by one thread at a time: callers on
// other threads get their own. The handle stays owned here: never destroy it.
#include <cufft.h>

namespace qgpu {

// Plan for an nr x nc transform of `type` on the current device, on the default stream.
cufftHandle cached_plan_2d(int nr, int nc, cufftType type);

}  // namespace qgpu
