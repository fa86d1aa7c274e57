// Batched direct DFT along one axis of complex f32 data (any length), shared by dpc/webgpu (iDPC) and
// ssb/webgpu: output k of a line = sum_j x[j] (cos, sign * sin)(2 pi j k / n), summed with Kahan compensation;
// the twiddle table (cos, sin)(2 pi m / n) comes from the host, computed in double. Element j of line l of
// batch b is at b * batch_stride + l * line_stride + j * stride. Inverse transforms (sign +1) are unnormalised.
// Cost O(n) per output: meant for the scan sizes a browser holds.

struct DftAxis {
  n: u32,
  lines: u32,
  stride: u32,
  line_stride: u32,
  sign: f32,
  batches: u32,
  batch_stride: u32,
  pad: u32,
}

@group(0) @binding(0) var<uniform> dft_params: DftAxis;
@group(0) @binding(1) var<storage, read> dft_src: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> dft_dst: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read> dft_twiddle: array<vec2<f32>>;

@compute @workgroup_size(64)
fn dft_axis(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let id = gid.x + gid.y * groups.x * 64u;
  let per_batch = dft_params.n * dft_params.lines;
  if (id >= per_batch * dft_params.batches) {
    return;
  }
  let b = id / per_batch;
  let rest = id - b * per_batch;
  let line = rest / dft_params.n;
  let k = rest - line * dft_params.n;
  let base = b * dft_params.batch_stride + line * dft_params.line_stride;
  var sum = vec2<f32>(0.0, 0.0);
  var comp = vec2<f32>(0.0, 0.0);
  var m = 0u;  // j * k mod n
  for (var j = 0u; j < dft_params.n; j = j + 1u) {
    let x = dft_src[base + j * dft_params.stride];
    let w = dft_twiddle[m];
    let s = dft_params.sign * w.y;
    let term = vec2<f32>(x.x * w.x - x.y * s, x.x * s + x.y * w.x) - comp;
    let t = sum + term;
    comp = (t - sum) - term;
    sum = t;
    m = m + k;
    if (m >= dft_params.n) {
      m = m - dft_params.n;
    }
  }
  dft_dst[base + k * dft_params.stride] = sum;
}
