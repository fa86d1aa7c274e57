#version 450
// SSB on vulkan, step 1: the BF-disk pixels of one segment's frames summed per K group into the FFT batch,
// out[(g - g0) * n + first_frame + f] = (sum_{p in group g} frame_f[p], 0) (complex64, scan order), for the groups
// [g0, g0 + count). One invocation per (group, frame); the pixel lists are the plan's CSR (offsets, pixels).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Data { uint data[]; };
layout(std430, binding = 1) readonly buffer Offsets { uint offsets[]; };
layout(std430, binding = 2) readonly buffer Pixels { uint pixels[]; };
layout(std430, binding = 3) writeonly buffer Out { vec2 outv[]; };
layout(push_constant) uniform Push {
  uint frame_pixels;
  uint frames;       // frames in this segment
  uint first_frame;  // scan index of the segment's first frame
  uint kind;
  uint g0, count;    // the groups of this batch
  uint n;            // scan positions (the stride of one group in `outv`)
} pc;
#include "device/vulkan/glsl/elements.glsl"

void main() {
  const uint t = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (t >= pc.count * pc.frames) return;
  const uint gl = t / pc.frames, f = t % pc.frames, g = pc.g0 + gl;
  const uint base = f * pc.frame_pixels;
  float s = 0.0;
  for (uint k = offsets[g]; k < offsets[g + 1u]; ++k) {
    const uint v = element_bits(pc.kind, base + pixels[k]);
    s += kind_signed(pc.kind) ? float(int(v)) : float(v);
  }
  outv[gl * pc.n + pc.first_frame + f] = vec2(s, 0.0);
}
