#include "io/merlin/mib_decode.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"

namespace qgpu::io::merlin {

namespace {

template <class T> void decode_as(const PixelFormat& f, const std::uint8_t* p, T* out) {
  const std::uint32_t rows = f.rows, cols = f.cols;
  if (!f.raw) {  // binary: byte swap row by row (rows read bottom up when flipped)
    for (std::uint32_t r = 0; r < rows; ++r) {
      const std::uint8_t* src = p + std::uint64_t(f.flip_rows ? rows - 1 - r : r) * cols * sizeof(T);
      T* dst = out + std::uint64_t(r) * cols;
      if constexpr (sizeof(T) == 1) {
        std::memcpy(dst, src, cols);
      } else if constexpr (sizeof(T) == 2) {
        for (std::uint32_t c = 0; c < cols; ++c) dst[c] = T(load_be16(src + 2 * c));
      } else {
        for (std::uint32_t c = 0; c < cols; ++c) dst[c] = T(load_be32(src + 4 * c));
      }
    }
    return;
  }
  for (std::uint32_t r = 0; r < rows; ++r)
    for (std::uint32_t c = 0; c < cols; ++c) out[std::uint64_t(r) * cols + c] = T(mib_pixel(f, p, r, c));
}

void put_be16(std::uint8_t* p, std::uint32_t v) {
  p[0] = std::uint8_t(v >> 8);
  p[1] = std::uint8_t(v);
}

template <class T> void encode_as(const PixelFormat& f, const T* frame, std::uint8_t* p) {
  std::memset(p, 0, f.payload_bytes);
  const std::uint32_t max = f.counter_depth == 0 ? 0xffu : f.counter_depth >= 32 ? 0xffffffffu : (1u << f.counter_depth) - 1u;
  const std::uint64_t half = f.payload_bytes / 2;
  for (std::uint32_t r = 0; r < f.rows; ++r)
    for (std::uint32_t c = 0; c < f.cols; ++c) {
      const std::uint32_t v = frame[std::uint64_t(r) * f.cols + c];
      if (v > max)
        throw InvalidArgument("Merlin writer: count " + std::to_string(v) + " at pixel (" + std::to_string(r) + ", " +
                              std::to_string(c) + ") exceeds the counter depth " + std::to_string(f.counter_depth));
      const std::uint32_t rs = f.flip_rows ? f.rows - 1 - r : r;  // stored row of decoded row r
      if (!f.raw) {
        const std::uint64_t k = std::uint64_t(rs) * f.cols + c;
        if (f.stored == PixelType::U16) {
          put_be16(p + 2 * k, v);
        } else if (f.stored == PixelType::U32) {
          p[4 * k] = std::uint8_t(v >> 24), p[4 * k + 1] = std::uint8_t(v >> 16);
          p[4 * k + 2] = std::uint8_t(v >> 8), p[4 * k + 3] = std::uint8_t(v);
        } else {
          p[k] = std::uint8_t(v);
        }
        continue;
      }
      std::uint32_t i = 0;
      if (!raw_index(f, rs, c, &i)) continue;  // gap pixel: not stored
      switch (f.counter_depth) {
        case 1:
          if (v) p[8u * (i >> 6) + 7u - ((i & 63u) >> 3)] |= std::uint8_t(1u << (i & 7u));
          break;
        case 6: p[(i & ~7u) + 7u - (i & 7u)] = std::uint8_t(v); break;
        case 12: put_be16(p + 2u * ((i & ~3u) + 3u - (i & 3u)), v); break;
        default: {
          const std::uint32_t j = (i & ~3u) + 3u - (i & 3u);
          put_be16(p + 2u * j, v >> 12);
          put_be16(p + half + 2u * j, v & 0xfffu);
        }
      }
    }
}

}  // namespace

void decode_frame_host(const PixelFormat& f, const std::uint8_t* payload, void* out_frame) {
  switch (f.out_dtype) {
    case DType::u8: return decode_as(f, payload, static_cast<std::uint8_t*>(out_frame));
    case DType::u16: return decode_as(f, payload, static_cast<std::uint16_t*>(out_frame));
    case DType::u32: return decode_as(f, payload, static_cast<std::uint32_t*>(out_frame));
    default: throw DTypeError("Merlin decoder: output dtype " + dtype_name(f.out_dtype) + " is not uint8/16/32");
  }
}

void encode_frame_host(const PixelFormat& f, const void* frame, std::uint8_t* payload) {
  switch (f.out_dtype) {
    case DType::u8: return encode_as(f, static_cast<const std::uint8_t*>(frame), payload);
    case DType::u16: return encode_as(f, static_cast<const std::uint16_t*>(frame), payload);
    case DType::u32: return encode_as(f, static_cast<const std::uint32_t*>(frame), payload);
    default: throw DTypeError("Merlin writer: frame dtype " + dtype_name(f.out_dtype) + " is not uint8/16/32");
  }
}

}  // namespace qgpu::io::merlin
