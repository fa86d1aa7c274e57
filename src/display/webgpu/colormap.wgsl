// Colormap on WebGPU: value -> RGBA through a 256-entry table, with display::render's index formula
//   index = floor((v - lo) / (hi - lo) * 255 + 0.5) clamped to 0..255, 0 when hi <= lo;
//   non-finite values (NaN, +-inf) -> transparent black (0, 0, 0, 0).
// The values are already scaled (linear images pass through). WGSL has no f64: the formula runs in f32, so
// an index can differ by one from the double-precision CPU/CUDA render when t lands within f32 rounding of a
// half-integer boundary (rare; the e2e test counts such pixels). lut holds RGBA packed little-endian.

struct Params {
  count: u32,
  lo: f32,
  hi: f32,
  pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> values: array<f32>;
@group(0) @binding(2) var<storage, read> lut: array<u32, 256>;
@group(0) @binding(3) var<storage, read_write> rgba: array<u32>;

fn is_finite(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn color_index(s: f32, lo: f32, hi: f32) -> u32 {
  if (!(hi > lo)) {
    return 0u;
  }
  let t = (s - lo) / (hi - lo) * 255.0 + 0.5;
  if (!(t > 0.0)) {
    return 0u;
  }
  if (t >= 255.0) {
    return 255u;
  }
  return u32(t);  // truncation == floor for t > 0
}

@compute @workgroup_size(256)
fn colorize(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= params.count) {
    return;
  }
  let v = values[i];
  if (!is_finite(v)) {
    rgba[i] = 0u;
    return;
  }
  rgba[i] = lut[color_index(v, params.lo, params.hi)];
}
