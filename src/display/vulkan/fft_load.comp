#version 450
// The FFT view, step 1: the image as a complex field (imaginary part 0) in VkFFT's buffer.
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer In { float data[]; };
layout(std430, binding = 1) writeonly buffer Z { vec2 z[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (i < pc.n) z[i] = vec2(data[i], 0.0);
}
