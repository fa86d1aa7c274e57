#pragma once
// The numbers every domain shares, for host and device code: pi and the signed frequency index of an FFT bin.
#include <cstddef>

#include "core/hd.hpp"

namespace qgpu {

inline constexpr double kPi = 3.14159265358979323846;

// numpy.fft.fftfreq numerator: index i of an n-point transform -> signed frequency index, i for i <= (n - 1) / 2,
// else i - n (an even size's Nyquist bin n / 2 is negative). nyquist_positive: the Nyquist bin counts as +n / 2
// instead (i <= n / 2; the parallax's convention, where the bin is symmetric in its uses). Odd n: no difference.
QGPU_HD inline long long signed_frequency(std::size_t i, std::size_t n, bool nyquist_positive = false) {
  const std::size_t last_positive = nyquist_positive ? n / 2 : (n - 1) / 2;
  return i <= last_positive ? static_cast<long long>(i) : static_cast<long long>(i) - static_cast<long long>(n);
}

}  // namespace qgpu
