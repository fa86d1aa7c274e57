// Centre-of-mass sums per frame (WebGPU compute): S = sum I, Sr = sum r * I, Sc = sum c * I over the detector,
// each an exact unsigned 64-bit integer held as two u32 limbs (lo, hi), products formed exactly from 16-bit
// halves and every addition carried (as virtual_detector.wgsl). The host divides Sr / S and Sc / S in double and
// rounds to float32, the arithmetic of dpc/com_math.hpp, so the CoM equals the CPU reference bit for bit while
// S * max(det_rows, det_cols) < 2^64. One workgroup per frame; frames beyond 65535 use a second dispatch dimension.

struct Params {
  frames: u32,
  rows: u32,
  cols: u32,
  groups_x: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> frames: array<u32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;  // per frame: S lo, hi, Sr lo, hi, Sc lo, hi

const WG: u32 = 64u;
var<workgroup> part: array<vec2<u32>, 192>;  // S, Sr, Sc partials of the 64 invocations

// mul_wide, add_wide: core/webgpu/wide_int.wgsl (prepended when compiled).

@compute @workgroup_size(64)
fn com_sums(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let f = wid.x + wid.y * params.groups_x;
  if (f >= params.frames) {
    return;
  }
  let fp = params.rows * params.cols;
  let base = f * fp;
  var s = vec2<u32>(0u, 0u);
  var sr = vec2<u32>(0u, 0u);
  var sc = vec2<u32>(0u, 0u);
  for (var k = lid; k < fp; k = k + WG) {
    let v = frames[base + k];
    let r = k / params.cols;
    let c = k - r * params.cols;
    s = add_wide(s, vec2<u32>(v, 0u));
    sr = add_wide(sr, mul_wide(v, r));
    sc = add_wide(sc, mul_wide(v, c));
  }
  part[lid] = s;
  part[lid + 64u] = sr;
  part[lid + 128u] = sc;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
    if (lid < stride) {
      part[lid] = add_wide(part[lid], part[lid + stride]);
      part[lid + 64u] = add_wide(part[lid + 64u], part[lid + 64u + stride]);
      part[lid + 128u] = add_wide(part[lid + 128u], part[lid + 128u + stride]);
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    sums[6u * f] = part[0].x;
    sums[6u * f + 1u] = part[0].y;
    sums[6u * f + 2u] = part[64].x;
    sums[6u * f + 3u] = part[64].y;
    sums[6u * f + 4u] = part[128].x;
    sums[6u * f + 5u] = part[128].y;
  }
}
