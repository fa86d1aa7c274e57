#pragma once
// A dense dataset resident in Vulkan device memory: the frames in scan order, [det_row][det_col] native elements,
// cut into segments of whole frames (each one buffer no larger than Context::max_buffer_bytes(), so a shader binds a
// segment whole). No Vulkan header needed to hold one.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "resident/shape.hpp"

namespace qgpu::vulkan {

// The element kind of `t` as glsl/elements.glsl reads a segment (push constant `kind`): 0 uint8, 1 uint16, 2 uint32,
// 3 int8, 4 int16, 5 int32. Other dtypes: DTypeError "<what> reads integer data (...), not <dtype>".
inline std::uint32_t element_kind(DType t, const char* what) {
  switch (t) {
    case DType::u8: return 0;
    case DType::u16: return 1;
    case DType::u32: return 2;
    case DType::i8: return 3;
    case DType::i16: return 4;
    case DType::i32: return 5;
    default:
      throw DTypeError(std::string(what) + " reads integer data (uint8/16/32, int8/16/32), not " + dtype_name(t));
  }
}

class Buffer;

class Resident {
 public:
  struct Segment {
    std::unique_ptr<Buffer> buffer;
    std::size_t first_frame = 0, frames = 0;
  };
  // Allocates the segments for `shape` x `dtype` (OutOfMemory naming the bytes when the device has no room) and
  // uploads `host` (shape.elements() elements) into them; `host` may be null (then the frames are zero, or left
  // as allocated when `zero` is false: a caller that writes every frame, e.g. the shader decode of a load).
  Resident(const void* host, const Shape4D& shape, DType dtype, bool zero = true);
  ~Resident();
  Resident(const Resident&) = delete;
  Resident& operator=(const Resident&) = delete;

  const Shape4D& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  std::size_t frame_bytes() const { return shape_.frame_pixels() * dtype_size(dtype_); }
  const std::vector<Segment>& segments() const { return segments_; }
  // Writes frames [first, first + count) from host memory.
  void upload_frames(const void* src, std::size_t first, std::size_t count);
  // Copies frames [first, first + count) to host memory.
  void download_frames(void* dst, std::size_t first, std::size_t count) const;

 private:
  Shape4D shape_;
  DType dtype_;
  std::vector<Segment> segments_;
};

}  // namespace qgpu::vulkan
