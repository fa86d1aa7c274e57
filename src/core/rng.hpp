#pragma once
// The project's one random number generator: xoshiro256** seeded by splitmix64 (the same sequence on every
// platform and standard library), with uniform doubles in [0, 1), Box-Muller normals and indices. Used by the
// sample simulator (seeded per frame, so results do not depend on threading) and the SSB aberration optimiser.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace qgpu {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& v : s_) v = splitmix64(seed);
  }
  std::uint64_t next() {
    const std::uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return r;
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  std::size_t index(std::size_t n) { return std::min(n - 1, std::size_t(uniform() * double(n))); }

  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace qgpu
