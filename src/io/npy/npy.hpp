#pragma once
// NumPy .npy (format 1.0) writer for 2D results, so numpy.load reads them directly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qgpu::io {

// The header of a .npy file (magic, version, length, dict padded to a multiple of 64 bytes): the array data follow
// it. version 1 or 2 (2: 32-bit header length, for dicts beyond 64 KiB).
std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape, bool fortran_order = false,
                       unsigned version = 1);

// dtype descr: "<u8" (uint64), "<f4" (float32), "|u1" (uint8), ...; data is rows*cols*channels little-endian.
void write_npy(const std::string& path, const std::string& descr, const std::vector<std::size_t>& shape,
               const void* data, std::size_t bytes);

template <class T> std::string npy_descr();
template <> inline std::string npy_descr<std::uint64_t>() { return "<u8"; }
template <> inline std::string npy_descr<std::uint32_t>() { return "<u4"; }
template <> inline std::string npy_descr<std::uint16_t>() { return "<u2"; }
template <> inline std::string npy_descr<std::uint8_t>() { return "|u1"; }
template <> inline std::string npy_descr<std::int64_t>() { return "<i8"; }
template <> inline std::string npy_descr<std::int32_t>() { return "<i4"; }
template <> inline std::string npy_descr<std::int16_t>() { return "<i2"; }
template <> inline std::string npy_descr<std::int8_t>() { return "|i1"; }
template <> inline std::string npy_descr<float>() { return "<f4"; }
template <> inline std::string npy_descr<double>() { return "<f8"; }

template <class T>
void write_npy(const std::string& path, const std::vector<std::size_t>& shape, const std::vector<T>& data) {
  write_npy(path, npy_descr<T>(), shape, data.data(), data.size() * sizeof(T));
}

}  // namespace qgpu::io
