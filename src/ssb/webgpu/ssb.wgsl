// SSB ptychography on WebGPU at given aberrations (float32 throughout; the CPU reference is double, see ssb.ts
// for the stated tolerance). Kernels, in order:
//   gather:  G[g][s] = sum of the counts of group g's detector pixels at scan position s (as f32, imaginary 0)
//   (src/core/webgpu/dft.wgsl: the 2D DFT of every group's scan, forward, and of Psi, inverse, unnormalised)
//   ssb_sums: per scan frequency Q (full spectrum): num = sum_K G(K, Q) conj(Gamma), den = sum_K w |Gamma|^2,
//            Gamma = A*(K) A(K-Q) - A(K) A*(K+Q) (ssb/ssb_math.hpp), then Psi = num * scale / max(den, floor);
//            the DC term, even-size Nyquist row/column and |Q| > 2 kmax give 0.
// The host takes phase = arg(1 + IFFT(Psi)).

struct Gather {
  frames: u32,
  frame_pixels: u32,
  groups: u32,
  groups_x: u32,
}

@group(0) @binding(0) var<uniform> gp: Gather;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;  // groups + 1
@group(0) @binding(3) var<storage, read> pixels: array<u32>;
@group(0) @binding(4) var<storage, read_write> g_out: array<vec2<f32>>;  // [group][scan]

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let id = gid.x + gid.y * groups.x * 64u;
  if (id >= gp.frames * gp.groups) {
    return;
  }
  let g = id / gp.frames;
  let s = id - g * gp.frames;
  var sum = 0u;
  for (var k = offsets[g]; k < offsets[g + 1u]; k = k + 1u) {
    sum = sum + counts[s * gp.frame_pixels + pixels[k]];
  }
  g_out[id] = vec2<f32>(f32(sum), 0.0);
}

struct Sums {
  nr: u32,
  nc: u32,
  groups: u32,
  groups_x: u32,
  kmax2: f32,
  q2max: f32,
  scale: f32,
  floor: f32,
  // chi coefficients (ssb_math.hpp ChiCoeffs)
  two_pi_over_lambda: f32,
  lambda: f32,
  c1: f32,
  c3: f32,
  a1: f32,
  a1_cos: f32,
  a1_sin: f32,
  b2: f32,
  b2_cos: f32,
  b2_sin: f32,
  a2: f32,
  a2_cos: f32,
  a2_sin: f32,
  pad0: f32,
  pad1: f32,
  pad2: f32,
}

@group(0) @binding(0) var<uniform> sp: Sums;
@group(0) @binding(1) var<storage, read> gspec: array<vec2<f32>>;      // [group][q]
@group(0) @binding(2) var<storage, read> kgroup: array<vec4<f32>>;     // ky, kx, chi(K), weight
@group(0) @binding(3) var<storage, read> qaxes: array<f32>;            // qy[0..nr), qx[0..nc)
@group(0) @binding(4) var<storage, read_write> psi: array<vec2<f32>>;

fn chi(ky: f32, kx: f32) -> f32 {
  let l = sp.lambda;
  let w2 = l * l * (kx * kx + ky * ky);
  let re2 = l * l * ((kx * kx - ky * ky) * sp.a1_cos + 2.0 * kx * ky * sp.a1_sin);
  let re1 = l * (kx * sp.b2_cos + ky * sp.b2_sin);
  let re3 = l * l * l * ((kx * kx * kx - 3.0 * kx * ky * ky) * sp.a2_cos + (3.0 * kx * kx * ky - ky * ky * ky) * sp.a2_sin);
  let s = sp.c1 * w2 / 2.0 + sp.a1 * re2 / 2.0 + sp.b2 * w2 * re1 / 3.0 + sp.a2 * re3 / 3.0 + sp.c3 * w2 * w2 / 4.0;
  return sp.two_pi_over_lambda * s;
}

@compute @workgroup_size(64)
fn ssb_sums(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let q = gid.x + gid.y * groups.x * 64u;
  let n = sp.nr * sp.nc;
  if (q >= n) {
    return;
  }
  let i = q / sp.nc;
  let j = q - i * sp.nc;
  let qy = qaxes[i];
  let qx = qaxes[sp.nr + j];
  let dropped = (i == 0u && j == 0u) || (sp.nr % 2u == 0u && i == sp.nr / 2u) || (sp.nc % 2u == 0u && j == sp.nc / 2u);
  if (dropped || qy * qy + qx * qx > sp.q2max) {
    psi[q] = vec2<f32>(0.0, 0.0);
    return;
  }
  var num = vec2<f32>(0.0, 0.0);
  var den = 0.0;
  for (var g = 0u; g < sp.groups; g = g + 1u) {
    let k = kgroup[g];
    let my = k.x - qy;
    let mx = k.y - qx;
    let py = k.x + qy;
    let px = k.y + qx;
    let minus = my * my + mx * mx <= sp.kmax2;
    let plus = py * py + px * px <= sp.kmax2;
    if (!minus && !plus) {
      continue;
    }
    var gr = 0.0;
    var gi = 0.0;
    if (minus) {
      let a = k.z - chi(my, mx);
      gr = gr + cos(a);
      gi = gi + sin(a);
    }
    if (plus) {
      let a = chi(py, px) - k.z;
      gr = gr - cos(a);
      gi = gi - sin(a);
    }
    let gv = gspec[g * n + q];
    num = num + vec2<f32>(gv.x * gr + gv.y * gi, gv.y * gr - gv.x * gi);
    den = den + k.w * (gr * gr + gi * gi);
  }
  psi[q] = num * (sp.scale / max(den, sp.floor));
}
