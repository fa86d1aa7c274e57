#version 450
// Display range, step 1: the scaled value of every pixel (+inf for a non-finite one) and the count of finite
// pixels; the host picks the percentile ranks among the finite keys.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer In { float data[]; };
layout(std430, binding = 1) writeonly buffer Keys { float keys[]; };
layout(std430, binding = 2) buffer Count { uint finite_count; };
layout(push_constant) uniform Push { uint n, scale; } pc;
#include "display/vulkan/scaling.glsl"

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  const float v = data[i];
  if (is_finite_(v)) {
    keys[i] = scale_value(v, pc.scale);
    atomicAdd(finite_count, 1u);
  } else {
    keys[i] = uintBitsToFloat(0x7f800000u);
  }
}
