#version 450
// iDPC on vulkan, step 1: the periodic extension (dpc/idpc_backend.hpp padded_value) of the rows x cols gradients
// as one complex field z = G_row + i G_col over the padded nr x nc domain (one VkFFT C2C transforms both).
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };  // grad_row (rows x cols), then grad_col
layout(std430, binding = 1) writeonly buffer Z { vec2 z[]; };
layout(push_constant) uniform Push {
  uint rows, cols, pad_row, pad_col, nr, nc, mirror;
} pc;

// Source index of padded index q and the sign of the component normal to this axis (padded_source).
uint padded_source(uint q, uint before, uint n, out int sign_) {
  const int i = int(q) - int(before), nn = int(n);
  if (i >= 0 && i < nn) {
    sign_ = 1;
    return uint(i);
  }
  if (pc.mirror == 0u) {
    sign_ = 0;
    return 0u;
  }
  sign_ = -1;
  return uint(i < 0 ? -i - 1 : 2 * nn - 1 - i);
}

void main() {
  const uint k = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (k >= pc.nr * pc.nc) return;
  int sr, sc;
  const uint r = padded_source(k / pc.nc, pc.pad_row, pc.rows, sr);
  const uint c = padded_source(k % pc.nc, pc.pad_col, pc.cols, sc);
  if (sr == 0 || sc == 0) {
    z[k] = vec2(0.0);
    return;
  }
  const uint s = r * pc.cols + c;
  const float gr = src[s], gc = src[pc.rows * pc.cols + s];
  z[k] = vec2(sr < 0 ? -gr : gr, sc < 0 ? -gc : gc);
}
