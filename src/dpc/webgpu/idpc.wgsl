// Integrated DPC on WebGPU: the Fourier-integration coefficient of dpc/idpc_backend.hpp in f32 (the 2D DFTs
// around it are src/core/webgpu/dft.wgsl):
//   out = scale * (kr F[G_row] + kc F[G_col]) / (2 pi i k^2), k = 0 -> 0, Nyquist odd terms zeroed.
// Float32 throughout (tolerance stated in idpc.ts).

struct Coef {
  nr: u32,
  nc: u32,
  step_row: f32,
  step_col: f32,
  scale: f32,
  pad0: u32,
  pad1: u32,
  pad2: u32,
}

@group(0) @binding(0) var<uniform> coef: Coef;
@group(0) @binding(1) var<storage, read> spec_row: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> spec_col: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> spec_out: array<vec2<f32>>;

fn signed_frequency(i: u32, n: u32) -> f32 {
  if (i <= (n - 1u) / 2u) {
    return f32(i);
  }
  return f32(i) - f32(n);
}

@compute @workgroup_size(64)
fn coefficient(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let id = gid.x + gid.y * groups.x * 64u;
  if (id >= coef.nr * coef.nc) {
    return;
  }
  let i = id / coef.nc;
  let j = id - i * coef.nc;
  if (i == 0u && j == 0u) {
    spec_out[id] = vec2<f32>(0.0, 0.0);
    return;
  }
  let kr = signed_frequency(i, coef.nr) / (f32(coef.nr) * coef.step_row);
  let kc = signed_frequency(j, coef.nc) / (f32(coef.nc) * coef.step_col);
  let k2 = kr * kr + kc * kc;
  let kr_num = select(kr, 0.0, coef.nr % 2u == 0u && i == coef.nr / 2u);
  let kc_num = select(kc, 0.0, coef.nc % 2u == 0u && j == coef.nc / 2u);
  let fr = spec_row[id];
  let fc = spec_col[id];
  let num = kr_num * fr + kc_num * fc;
  let d = coef.scale / (6.283185307179586 * k2);
  spec_out[id] = vec2<f32>(num.y * d, -num.x * d);
}
