#version 450
// Display histogram: counts of each colour index over the finite pixels (a work group's bins in shared memory,
// then added to the 256 global counts; the host keeps the image below 2^32 pixels).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer In { float data[]; };
layout(std430, binding = 1) buffer Counts { uint counts[256]; };
layout(push_constant) uniform Push { uint n, scale; double lo, hi; } pc;
#include "display/vulkan/scaling.glsl"

shared uint bins[256];

void main() {
  const uint t = gl_LocalInvocationID.x;
  bins[t] = 0u;
  bins[t + 128u] = 0u;
  barrier();
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + t;
  if (i < pc.n) {
    const float v = data[i];
    if (is_finite_(v)) atomicAdd(bins[color_index(scale_value(v, pc.scale), pc.lo, pc.hi)], 1u);
  }
  barrier();
  for (uint b = t; b < 256u; b += 128u)
    if (bins[b] != 0u) atomicAdd(counts[b], bins[b]);
}
