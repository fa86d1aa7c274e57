#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.hpp"

namespace qgpu {

// Element types quantem-gpu stores and produces. A dataset holds unsigned counts (u8, u16, u32: the detector's
// native counts, dense or encoded) or, dense only, signed integers (i8, i16, i32) or float32 (a float64 file is read
// as float32). Products are uint64 (sums of unsigned counts), int64 (sums of signed integers) or float64/float32.
enum class DType { u8, u16, u32, u64, f32, f64, i8, i16, i32, i64 };

inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::u8: case DType::i8: return 1;
    case DType::u16: case DType::i16: return 2;
    case DType::u32: case DType::i32: case DType::f32: return 4;
    case DType::u64: case DType::i64: case DType::f64: return 8;
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
    case DType::i8: return "int8";
    case DType::i16: return "int16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
  }
  return "unknown";
}

inline DType dtype_from_name(const std::string& name) {
  for (DType t : {DType::u8, DType::u16, DType::u32, DType::u64, DType::f32, DType::f64, DType::i8, DType::i16,
                  DType::i32, DType::i64})
    if (dtype_name(t) == name) return t;
  throw DTypeError("unknown dtype '" + name + "'");
}

// True for the unsigned integer count types a dataset may hold (the encoded representation holds only these).
inline bool is_count_dtype(DType t) { return t == DType::u8 || t == DType::u16 || t == DType::u32; }
inline bool is_signed_dtype(DType t) { return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64; }
inline bool is_float_dtype(DType t) { return t == DType::f32 || t == DType::f64; }
// True for every element type a dense dataset may hold: the counts, signed integers and float32.
inline bool is_stored_dtype(DType t) {
  return is_count_dtype(t) || t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::f32;
}
// The type of exact sums of a dataset's elements: uint64 for counts, int64 for signed integers, float64 for floats.
inline DType sum_dtype(DType t) { return is_count_dtype(t) ? DType::u64 : is_signed_dtype(t) ? DType::i64 : DType::f64; }

template <class T> struct dtype_of;
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<std::uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_of<std::uint32_t> { static constexpr DType value = DType::u32; };
template <> struct dtype_of<std::uint64_t> { static constexpr DType value = DType::u64; };
template <> struct dtype_of<std::int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<std::int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };

// The accumulator of sums over elements of T: uint64 for unsigned counts, int64 for signed integers, double for
// floats (exact for integers; float64 accumulation for floats).
template <class T>
using sum_t = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;

// Calls f(T{}) with T the C++ type of a count dtype; raises DTypeError for any other.
template <class F> decltype(auto) dispatch_count_dtype(DType t, F&& f) {
  switch (t) {
    case DType::u8: return f(std::uint8_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::u32: return f(std::uint32_t{});
    default: throw DTypeError("unsupported count dtype " + dtype_name(t) + " (expected uint8, uint16 or uint32)");
  }
}

// Calls f(T{}) with T the C++ type of any dtype a dense dataset holds (is_stored_dtype); DTypeError for any other.
template <class F> decltype(auto) dispatch_stored_dtype(DType t, F&& f) {
  switch (t) {
    case DType::u8: return f(std::uint8_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::u32: return f(std::uint32_t{});
    case DType::i8: return f(std::int8_t{});
    case DType::i16: return f(std::int16_t{});
    case DType::i32: return f(std::int32_t{});
    case DType::f32: return f(float{});
    default:
      throw DTypeError("unsupported dtype " + dtype_name(t) +
                       " (expected uint8, uint16, uint32, int8, int16, int32 or float32)");
  }
}

}  // namespace qgpu
