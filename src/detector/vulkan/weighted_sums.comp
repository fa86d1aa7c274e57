#version 450
// Exact weighted sums of every frame of one segment: sums[out_first + f][j] = sum_p weights[j][p] x frame_f[p] for
// K = 1..3 weight vectors (a virtual detector: K = 1; the CoM's S, Sr, Sc: K = 3), modulo 2^64 as the CPU
// reference's uint64 / int64 sums. One work group per frame; every pixel read (the reference's dense pass).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Data { uint data[]; };
layout(std430, binding = 1) readonly buffer Weights { uint weights[]; };
layout(std430, binding = 2) buffer Sums { uvec2 sums[]; };
layout(push_constant) uniform Push {
  uint frame_pixels;
  uint frames;     // frames in this segment
  uint out_first;  // global index of the segment's first frame
  uint kind;
  uint k;
} pc;
#include "device/vulkan/glsl/elements.glsl"

shared uvec2 partial[3][128];

void main() {
  const uint f = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (f >= pc.frames) return;  // uniform over the work group
  const uint t = gl_LocalInvocationID.x;
  const uint base = f * pc.frame_pixels;
  uvec2 acc[3] = uvec2[3](uvec2(0u), uvec2(0u), uvec2(0u));
  for (uint p = t; p < pc.frame_pixels; p += 128u) {
    const uint v = element_bits(pc.kind, base + p);
    if (v == 0u) continue;
    for (uint j = 0u; j < pc.k; ++j) {
      const uint w = weights[j * pc.frame_pixels + p];
      if (w != 0u) acc[j] = add64(acc[j], mul64(pc.kind, v, w));
    }
  }
  for (uint j = 0u; j < 3u; ++j) partial[j][t] = acc[j];
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (t < s)
      for (uint j = 0u; j < 3u; ++j) partial[j][t] = add64(partial[j][t], partial[j][t + s]);
    barrier();
  }
  if (t < pc.k) sums[(pc.out_first + f) * pc.k + t] = partial[t][0];
}
