#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace qgpu {

// Native detector count types quantem-gpu stores, plus the result types it produces.
enum class DType { u8, u16, u32, u64, f32, f64 };

inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::u8: return 1;
    case DType::u16: return 2;
    case DType::u32: return 4;
    case DType::u64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
  }
  return 0;
}

inline std::string dtype_name(DType t) {
  switch (t) {
    case DType::u8: return "uint8";
    case DType::u16: return "uint16";
    case DType::u32: return "uint32";
    case DType::u64: return "uint64";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
  }
  return "unknown";
}

inline DType dtype_from_name(const std::string& name) {
  if (name == "uint8") return DType::u8;
  if (name == "uint16") return DType::u16;
  if (name == "uint32") return DType::u32;
  if (name == "uint64") return DType::u64;
  if (name == "float32") return DType::f32;
  if (name == "float64") return DType::f64;
  throw DTypeError("unknown dtype '" + name + "'");
}

// True for the integer count types a dataset may hold.
inline bool is_count_dtype(DType t) { return t == DType::u8 || t == DType::u16 || t == DType::u32; }

template <class T> struct dtype_of;
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<std::uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_of<std::uint32_t> { static constexpr DType value = DType::u32; };
template <> struct dtype_of<std::uint64_t> { static constexpr DType value = DType::u64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };

// Calls f(T{}) with T the C++ type of a count dtype; raises DTypeError for any other.
template <class F> decltype(auto) dispatch_count_dtype(DType t, F&& f) {
  switch (t) {
    case DType::u8: return f(std::uint8_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::u32: return f(std::uint32_t{});
    default: throw DTypeError("unsupported count dtype " + dtype_name(t) + " (expected uint8, uint16 or uint32)");
  }
}

}  // namespace qgpu
