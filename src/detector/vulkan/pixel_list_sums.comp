#version 450
// Exact weighted sums over a pixel list, for masks with few nonzero weights (a BF disk, the complement of an ADF
// annulus, a masked CoM): sums[out_first + f][j] = sum_i w_j(i) x frame_f[pixels[i]] modulo 2^64, as the CPU
// reference's uint64 / int64 sums. Only the listed pixels are read: 32 threads per frame (four frames per work
// group) walk the list together, so the list reads are coalesced and the element reads gather within one frame.
// The weights: w_0(i) = 1 when `unit` is set (a uniform mask: the host multiplies the sums by its weight), else
// weights[i]; with K = 3 (CoM) also w_0 x det_row and w_0 x det_col of pixels[i] (uint32 products, as the host's).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Data { uint data[]; };
layout(std430, binding = 1) readonly buffer Pixels { uint pixels[]; };
layout(std430, binding = 2) readonly buffer Weights { uint weights[]; };
layout(std430, binding = 3) buffer Sums { uvec2 sums[]; };
layout(push_constant) uniform Push {
  uint frame_pixels;
  uint frames;     // frames in this segment
  uint out_first;  // global index of the segment's first frame
  uint kind;
  uint count;  // pixels in the list
  uint unit;
  uint k;     // 1 or 3
  uint cols;  // det_cols (K = 3)
} pc;
#include "device/vulkan/glsl/elements.glsl"

const uint kTeam = 32u;
shared uvec2 partial[3][128];

void main() {
  const uint t = gl_LocalInvocationID.x, lane = t % kTeam, team = t / kTeam;
  const uint f = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (128u / kTeam) + team;
  const bool live = f < pc.frames;  // every thread reaches the barriers below
  uvec2 acc0 = uvec2(0u), acc1 = uvec2(0u), acc2 = uvec2(0u);
  if (live) {
    const uint base = f * pc.frame_pixels;
    for (uint i = lane; i < pc.count; i += kTeam) {
      const uint p = pixels[i];
      const uint v = element_bits(pc.kind, base + p);
      if (v == 0u) continue;
      const uint w = pc.unit != 0u ? 1u : weights[i];
      acc0 = add64(acc0, pc.unit != 0u ? widen(pc.kind, v) : mul64(pc.kind, v, w));
      if (pc.k == 3u) {
        acc1 = add64(acc1, mul64(pc.kind, v, w * (p / pc.cols)));
        acc2 = add64(acc2, mul64(pc.kind, v, w * (p % pc.cols)));
      }
    }
  }
  partial[0][t] = acc0;
  partial[1][t] = acc1;
  partial[2][t] = acc2;
  barrier();
  for (uint s = kTeam / 2u; s > 0u; s >>= 1) {
    if (lane < s)
      for (uint j = 0u; j < pc.k; ++j) partial[j][t] = add64(partial[j][t], partial[j][t + s]);
    barrier();
  }
  if (live && lane < pc.k) sums[(pc.out_first + f) * pc.k + lane] = partial[lane][team * kTeam];
}
