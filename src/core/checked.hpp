#pragma once
// Checked size arithmetic: every shape, size or offset product taken from a file or a request goes through
// these, so an absurd value raises an error naming what overflowed instead of wrapping to a small number.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace qgpu {

// a * b, or E("<what> overflows: a x b").
template <class E = FormatError> std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw E(std::string(what) + " overflows 64 bits: " + std::to_string(a) + " x " + std::to_string(b));
  return r;
}

// a + b, or E("<what> overflows: a + b").
template <class E = FormatError> std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw E(std::string(what) + " overflows 64 bits: " + std::to_string(a) + " + " + std::to_string(b));
  return r;
}

// The product of all factors, checked.
template <class E = FormatError>
std::uint64_t checked_product(std::initializer_list<std::uint64_t> factors, std::string_view what) {
  std::uint64_t r = 1;
  for (std::uint64_t f : factors) r = checked_mul<E>(r, f, what);
  return r;
}

// Largest byte count one in-memory array may have: beyond this no allocation can succeed on a 64-bit machine
// (and std::vector / cudaMalloc sizes stay well clear of wrapping). 2^56 bytes = 64 PiB.
inline constexpr std::uint64_t kMaxArrayBytes = std::uint64_t(1) << 56;

}  // namespace qgpu
