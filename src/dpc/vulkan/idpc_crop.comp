#version 450
// iDPC on vulkan, step 3: the potential is the real part of the inverse transform; the rows x cols source region
// at (pad_row, pad_col) of the padded nr x nc domain, cropped.
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Z { vec2 z[]; };
layout(std430, binding = 1) writeonly buffer Out { float phi[]; };
layout(push_constant) uniform Push {
  uint rows, cols, pad_row, pad_col, nc;
} pc;

void main() {
  const uint k = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (k >= pc.rows * pc.cols) return;
  phi[k] = z[(k / pc.cols + pc.pad_row) * pc.nc + k % pc.cols + pc.pad_col].x;
}
