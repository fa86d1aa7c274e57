// Integrated DPC on WebGPU: 2D discrete Fourier transforms as a direct DFT along each axis (any size; each
// output sums n terms in f32 with Kahan compensation, twiddles cos/sin(2 pi m / n) from a table computed in
// double on the host), and the Fourier-integration coefficient of dpc/idpc_backend.hpp in f32:
//   out = scale * (kr F[G_row] + kc F[G_col]) / (2 pi i k^2), k = 0 -> 0, Nyquist odd terms zeroed.
// Cost O(n) per output: meant for scans a browser holds; float32 throughout (tolerance stated in idpc.ts).

struct Axis {
  n: u32,            // transform length
  lines: u32,        // transforms
  stride: u32,       // elements between consecutive samples of a line
  line_stride: u32,  // elements between the starts of consecutive lines
  sign: f32,         // -1 forward, +1 inverse
  pad0: u32,
  pad1: u32,
  pad2: u32,
}

@group(0) @binding(0) var<uniform> axis: Axis;
@group(0) @binding(1) var<storage, read> src: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read> twiddle: array<vec2<f32>>;  // (cos, sin)(2 pi m / n), m < n

@compute @workgroup_size(64)
fn dft_axis(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let id = gid.x + gid.y * groups.x * 64u;
  if (id >= axis.n * axis.lines) {
    return;
  }
  let line = id / axis.n;
  let k = id - line * axis.n;
  let base = line * axis.line_stride;
  var sum = vec2<f32>(0.0, 0.0);
  var comp = vec2<f32>(0.0, 0.0);
  var m = 0u;  // j * k mod n
  for (var j = 0u; j < axis.n; j = j + 1u) {
    let x = src[base + j * axis.stride];
    let w = twiddle[m];
    let s = axis.sign * w.y;
    let term = vec2<f32>(x.x * w.x - x.y * s, x.x * s + x.y * w.x) - comp;
    let t = sum + term;
    comp = (t - sum) - term;
    sum = t;
    m = m + k;
    if (m >= axis.n) {
      m = m - axis.n;
    }
  }
  dst[base + k * axis.stride] = sum;
}

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
