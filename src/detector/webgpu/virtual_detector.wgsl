// Virtual detector on a window of frames (WebGPU compute): for every frame f
//   sums[f] = sum_k weights[k] * frames[f * frame_pixels + offsets[k]]
// over the mask's nonzero pixels (offsets, weights), evaluated exactly in unsigned 64-bit arithmetic held as
// two u32 limbs (lo, hi): each u32 x u32 product is formed exactly from 16-bit halves and every addition
// carries into the high limb. Bound: exact whenever the true sum is < 2^64, i.e. sum(weights) * max(count)
// < 2^64; for 0/1 masks over uint32 counts that is any detector below 2^32 pixels. Within the bound the
// result equals the CPU reference (detector::virtual_image, uint64) bit for bit.
// One workgroup per frame; frames beyond 65535 use a second dispatch dimension (params.groups_x).

struct Params {
  frames: u32,
  frame_pixels: u32,
  mask_len: u32,
  groups_x: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> frames: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read> weights: array<u32>;
@group(0) @binding(4) var<storage, read_write> sums: array<u32>;  // (lo, hi) per frame

const WG: u32 = 64u;
var<workgroup> part_lo: array<u32, 64>;
var<workgroup> part_hi: array<u32, 64>;

// mul_wide, add_wide: core/webgpu/wide_int.wgsl (prepended when compiled).

@compute @workgroup_size(64)
fn masked_sum(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let f = wid.x + wid.y * params.groups_x;
  if (f >= params.frames) {
    return;  // uniform: f depends on the workgroup only
  }
  let base = f * params.frame_pixels;
  var acc = vec2<u32>(0u, 0u);
  for (var k = lid; k < params.mask_len; k = k + WG) {
    acc = add_wide(acc, mul_wide(frames[base + offsets[k]], weights[k]));
  }
  part_lo[lid] = acc.x;
  part_hi[lid] = acc.y;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
    if (lid < stride) {
      let s = add_wide(vec2<u32>(part_lo[lid], part_hi[lid]), vec2<u32>(part_lo[lid + stride], part_hi[lid + stride]));
      part_lo[lid] = s.x;
      part_hi[lid] = s.y;
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    sums[2u * f] = part_lo[0];
    sums[2u * f + 1u] = part_hi[0];
  }
}
