#version 450
// Display: colour of every pixel, LUT[color_index(scale(v))], transparent black for a non-finite pixel.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer In { float data[]; };
layout(std430, binding = 1) readonly buffer Lut { uint lut[256]; };  // RGBA bytes of each colour
layout(std430, binding = 2) writeonly buffer Out { uint rgba[]; };
layout(push_constant) uniform Push { uint n, scale; double lo, hi; } pc;
#include "display/vulkan/scaling.glsl"

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  const float v = data[i];
  rgba[i] = is_finite_(v) ? lut[color_index(scale_value(v, pc.scale), pc.lo, pc.hi)] : 0u;
}
