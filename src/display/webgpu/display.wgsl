// Display on WebGPU: scaling (linear, log = log(1 + v) for v > 0 else 0, signed_log = sign(v) log(1 + |v|)),
// colour index floor((s - lo) / (hi - lo) * 255 + 0.5) clamped to 0..255, RGBA through a 256-entry table and the
// 256-bin histogram of the indices (non-finite pixels: transparent, not counted). WGSL has no f64, and the CPU
// reference (display/scaling.hpp) computes in double with its own logarithm; so each pixel's index is computed
// in f32 together with a bound on its error: when the whole interval t +- err floors to one index, that index is
// the double one and the pixel is coloured and counted here; otherwise the pixel is listed (flagged) and the host
// recomputes it in double (display.ts). The result, RGBA and histogram, equals the CPU reference exactly.

struct Params {
  count: u32,
  scale: u32,   // 0 linear, 1 log, 2 signed_log
  lo: f32,
  hi: f32,
  groups_x: u32,
  max_flagged: u32,
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> values: array<f32>;
@group(0) @binding(2) var<storage, read> lut: array<u32, 256>;
@group(0) @binding(3) var<storage, read_write> rgba: array<u32>;
@group(0) @binding(4) var<storage, read_write> hist: array<atomic<u32>, 256>;
@group(0) @binding(5) var<storage, read_write> flagged: array<atomic<u32>>;  // [0] = count, then pixel indices

var<workgroup> local_hist: array<atomic<u32>, 256>;

fn is_finite(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// log(1 + x), x >= 0, in f32 (a short series where 1 + x loses x's digits).
fn log1p_f32(x: f32) -> f32 {
  if (x < 1e-3) {
    return x * (1.0 - x * (0.5 - x / 3.0));
  }
  return log(1.0 + x);
}

fn index_of(t: f32) -> i32 {
  if (!(t > 0.0)) {
    return 0;
  }
  if (t >= 255.0) {
    return 255;
  }
  return i32(t);
}

@compute @workgroup_size(256)
fn display(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  atomicStore(&local_hist[lid], 0u);
  workgroupBarrier();
  let i = (wid.x + wid.y * params.groups_x) * 256u + lid;
  if (i < params.count) {
    let v = values[i];
    if (!is_finite(v)) {
      rgba[i] = 0u;
    } else {
      var s = v;
      var s_err = 0.0;
      if (params.scale != 0u) {
        let a = log1p_f32(abs(v));
        s_err = 4e-6 * max(1.0, a);
        if (params.scale == 1u) {
          s = select(0.0, a, v > 0.0);
          s_err = select(0.0, s_err, v > 0.0);
        } else {
          s = select(-a, a, v > 0.0);
          s_err = select(s_err, 0.0, v == 0.0);
        }
      }
      let lo = params.lo;
      let hi = params.hi;
      let range = hi - lo;
      var idx = 0;
      var sure = false;
      if (!(range > 0.0) || !is_finite(range)) {
        sure = false;  // host decides (double range may still be positive)
      } else {
        let t = (s - lo) / range * 255.0 + 0.5;
        let err = ((abs(s) + abs(lo) + abs(hi)) * 5e-7 + s_err) * 255.0 / range + 3e-6 * 256.0;
        idx = index_of(t);
        sure = is_finite(t) && index_of(t - err) == index_of(t + err);
      }
      rgba[i] = lut[u32(idx)];
      if (sure) {
        atomicAdd(&local_hist[u32(idx)], 1u);
      } else {
        let k = atomicAdd(&flagged[0], 1u);
        if (k < params.max_flagged) {
          atomicStore(&flagged[k + 1u], i);
        }
      }
    }
  }
  workgroupBarrier();
  let n = atomicLoad(&local_hist[lid]);
  if (n != 0u) {
    atomicAdd(&hist[lid], n);
  }
}
