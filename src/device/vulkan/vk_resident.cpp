#include "device/vulkan/vk_resident.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "device/vulkan/vk_context.hpp"

namespace qgpu::vulkan {

Resident::Resident(const void* host, const Shape4D& shape, DType dtype, bool zero) : shape_(shape), dtype_(dtype) {
  Context& c = Context::get();
  const std::size_t fb = frame_bytes();
  const std::size_t frames = shape.frames();
  if (fb > c.max_buffer_bytes())
    throw InvalidArgument("vulkan: one frame of " + std::to_string(fb) + " bytes exceeds the " +
                          std::to_string(c.max_buffer_bytes()) + " bytes one storage buffer binding may cover");
  const std::size_t per = std::max<std::size_t>(1, c.max_buffer_bytes() / std::max<std::size_t>(fb, 1));
  for (std::size_t f = 0; f < frames; f += per) {
    Segment s;
    s.first_frame = f;
    s.frames = std::min(per, frames - f);
    s.buffer = std::make_unique<Buffer>(checked_mul<OutOfMemory>(s.frames, fb, "vulkan resident segment"));
    segments_.push_back(std::move(s));
  }
  if (host) upload_frames(host, 0, frames);
  else if (zero)
    for (auto& s : segments_) s.buffer->fill_zero();
}

Resident::~Resident() = default;

void Resident::upload_frames(const void* src, std::size_t first, std::size_t count) {
  const std::size_t fb = frame_bytes();
  const auto* p = static_cast<const std::uint8_t*>(src);
  for (auto& s : segments_) {
    const std::size_t a = std::max(first, s.first_frame), b = std::min(first + count, s.first_frame + s.frames);
    if (a >= b) continue;
    s.buffer->upload(p + (a - first) * fb, (b - a) * fb, (a - s.first_frame) * fb);
  }
}

void Resident::download_frames(void* dst, std::size_t first, std::size_t count) const {
  if (first > shape_.frames() || count > shape_.frames() - first)
    throw RegionError("vulkan resident: frames [" + std::to_string(first) + ", +" + std::to_string(count) +
                      ") outside the " + std::to_string(shape_.frames()) + " frames");
  const std::size_t fb = frame_bytes();
  auto* p = static_cast<std::uint8_t*>(dst);
  for (const auto& s : segments_) {
    const std::size_t a = std::max(first, s.first_frame), b = std::min(first + count, s.first_frame + s.frames);
    if (a >= b) continue;
    s.buffer->download(p + (a - first) * fb, (b - a) * fb, (a - s.first_frame) * fb);
  }
}

}  // namespace qgpu::vulkan
