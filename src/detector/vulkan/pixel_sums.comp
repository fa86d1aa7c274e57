#version 450
// Per-pixel sum (mode 0, exact modulo 2^64) or maximum (mode 1, as 32-bit bits: unsigned or signed compare) over
// frames [frame0, frame0 + frames) of one segment, added to (or maxed into) out[p]: one thread per detector pixel,
// adjacent threads on adjacent pixels.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Data { uint data[]; };
layout(std430, binding = 1) buffer Out { uvec2 out_values[]; };
layout(push_constant) uniform Push {
  uint frame_pixels;
  uint frame0;
  uint frames;
  uint kind;
  uint mode;
} pc;
#include "device/vulkan/glsl/elements.glsl"

void main() {
  const uint p = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (p >= pc.frame_pixels) return;
  uvec2 acc = out_values[p];
  if (pc.mode == 0u) {
    for (uint f = pc.frame0; f < pc.frame0 + pc.frames; ++f)
      acc = add64(acc, widen(pc.kind, element_bits(pc.kind, f * pc.frame_pixels + p)));
  } else if (kind_signed(pc.kind)) {
    int m = int(acc.x);
    for (uint f = pc.frame0; f < pc.frame0 + pc.frames; ++f)
      m = max(m, int(element_bits(pc.kind, f * pc.frame_pixels + p)));
    acc = uvec2(uint(m), 0u);
  } else {
    uint m = acc.x;
    for (uint f = pc.frame0; f < pc.frame0 + pc.frames; ++f) m = max(m, element_bits(pc.kind, f * pc.frame_pixels + p));
    acc = uvec2(m, 0u);
  }
  out_values[p] = acc;
}
