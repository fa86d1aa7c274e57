#pragma once
// Per-pixel arithmetic of the display pipeline, shared by the CPU reference and the CUDA kernels.
//
// CPU and CUDA must produce bit-identical colour indices, so everything here uses only operations that
// IEEE 754 defines exactly and both compilers implement identically (the project builds host code with
// -ffp-contract=off and device code with -fmad=false, so no fused multiply-adds): integer bit operations,
// double +, -, *, / and float<->double conversions. No libm call: std::log (glibc) and log (CUDA libdevice)
// can differ in the last bit, so the logarithm is computed here from a fixed polynomial.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/hd.hpp"
#include "display/scale.hpp"

namespace qgpu::display {

QGPU_HD inline std::uint64_t double_bits(double x) {
#ifdef __CUDA_ARCH__
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

QGPU_HD inline double double_from_bits(std::uint64_t u) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

QGPU_HD inline std::uint32_t float_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

// False for NaN and +-inf (exponent field all ones).
QGPU_HD inline bool is_finite(float v) { return (float_bits(v) & 0x7f800000u) != 0x7f800000u; }

// Natural logarithm of a positive, normal, finite double; relative error below 1e-15.
// x = 2^e * m with m in (sqrt(1/2), sqrt(2)], then log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716,
// summed as the odd series 2 s (1 + s^2/3 + s^4/5 + ... + s^20/21); the first omitted term is < 1e-18 of it.
QGPU_HD inline double det_log(double x) {
  const std::uint64_t u = double_bits(x);
  int e = static_cast<int>((u >> 52) & 0x7ff) - 1023;
  double m = double_from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);  // m in [1, 2)
  if (m > 1.4142135623730951) {
    m = m * 0.5;  // exact
    e = e + 1;
  }
  const double f = m - 1.0;  // exact (Sterbenz)
  const double s = f / (2.0 + f);
  const double s2 = s * s;
  double p = 1.0 / 21.0;
  p = p * s2 + 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  p = p * s2 + 1.0;
  const double log_m = 2.0 * s * p;
  // log(2) split so that e * kLn2Hi is exact for any double exponent.
  const double kLn2Hi = 6.93147180369123816490e-01;  // 0x3fe62e42fee00000
  const double kLn2Lo = 1.90821492927058770002e-10;
  const double de = static_cast<double>(e);
  return de * kLn2Hi + (de * kLn2Lo + log_m);
}

// log(1 + x) for finite x >= 0, accurate also for tiny x (where 1 + x rounds to 1): the rounding of
// u = 1 + x is compensated by the factor x / (u - 1) (Goldberg's trick).
QGPU_HD inline double det_log1p(double x) {
  const double u = 1.0 + x;
  if (u == 1.0) return x;
  return det_log(u) * (x / (u - 1.0));
}

// The scaled value of a finite pixel. -0 becomes +0 so that sorting (CUB radix sort orders -0 before +0,
// std::sort treats them equal) and hence percentiles are identical on both backends.
QGPU_HD inline float scale_value(float v, Scale scale) {
  if (v == 0.0f) return 0.0f;
  switch (scale) {
    case Scale::linear: return v;
    case Scale::log: return v > 0.0f ? static_cast<float>(det_log1p(static_cast<double>(v))) : 0.0f;
    case Scale::signed_log: {
      const float a = static_cast<float>(det_log1p(static_cast<double>(v > 0.0f ? v : -v)));
      return v > 0.0f ? a : -a;
    }
  }
  return v;
}

// Colour index of a scaled value s in the display range [lo, hi]:
//   floor((s - lo) / (hi - lo) * 255 + 0.5) clamped to 0..255, evaluated in double; 0 when hi <= lo.
QGPU_HD inline int color_index(float s, double lo, double hi) {
  if (!(hi > lo)) return 0;
  const double t = (static_cast<double>(s) - lo) / (hi - lo) * 255.0 + 0.5;
  if (!(t > 0.0)) return 0;
  if (t >= 255.0) return 255;
  return static_cast<int>(t);  // truncation == floor for t > 0
}

// Displayed value of one FFT coefficient: log(1 + |re + i im|). Only compared within a tolerance between
// backends (the FFTs themselves differ), but uses the same arithmetic anyway.
QGPU_HD inline float fft_display_value(float re, float im) {
  const double r = static_cast<double>(re), i = static_cast<double>(im);
#ifdef __CUDA_ARCH__
  const double magnitude = sqrt(r * r + i * i);
#else
  const double magnitude = std::sqrt(r * r + i * i);
#endif
  return static_cast<float>(det_log1p(magnitude));
}

}  // namespace qgpu::display
