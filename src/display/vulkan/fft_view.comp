#version 450
// The FFT view, step 2: log(1 + |F|) of the forward transform, fftshifted (zero frequency at (rows/2, cols/2)),
// with display/scaling.hpp's fft_display_value arithmetic (double magnitude, the polynomial logarithm).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Z { vec2 z[]; };
layout(std430, binding = 1) writeonly buffer Out { float view[]; };
layout(push_constant) uniform Push { uint rows, cols; } pc;
#include "display/vulkan/scaling.glsl"

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (i >= pc.rows * pc.cols) return;
  const uint r = i / pc.cols, c = i % pc.cols;
  const uint sr = (r + pc.rows - pc.rows / 2u) % pc.rows, sc = (c + pc.cols - pc.cols / 2u) % pc.cols;
  const vec2 x = z[sr * pc.cols + sc];
  precise const double re = double(x.x), im = double(x.y);
  precise const double magnitude = sqrt(re * re + im * im);
  view[i] = float(det_log1p(magnitude));
}
