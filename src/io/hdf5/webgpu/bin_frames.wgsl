// Exact detector binning on WebGPU: out[f][r][c] = sum over the bin x bin block of in[f][r * bin + i][c * bin + j]
// (u32 counts; count-preserving). A block sum that would pass 2^32 - 1 sets overflow[0] = 1 and the load is
// refused by the host (only possible for uint32 counts), never wrapped silently.

struct Params {
  frames: u32,
  det_rows: u32,
  det_cols: u32,
  bin: u32,
  groups_x: u32,
  out_offset: u32,   // first output element (frames already placed)
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<storage, read_write> overflow: array<atomic<u32>>;

@compute @workgroup_size(64)
fn bin_frames(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let id = gid.x + gid.y * groups.x * 64u;
  let orows = params.det_rows / params.bin;
  let ocols = params.det_cols / params.bin;
  let per = orows * ocols;
  if (id >= params.frames * per) {
    return;
  }
  let f = id / per;
  let k = id - f * per;
  let r = k / ocols;
  let c = k - r * ocols;
  let base = f * params.det_rows * params.det_cols;
  var sum = 0u;
  var wrapped = false;
  for (var i = 0u; i < params.bin; i = i + 1u) {
    for (var j = 0u; j < params.bin; j = j + 1u) {
      let v = src[base + (r * params.bin + i) * params.det_cols + c * params.bin + j];
      let s = sum + v;
      wrapped = wrapped || s < sum;
      sum = s;
    }
  }
  if (wrapped) {
    atomicStore(&overflow[0], 1u);
  }
  dst[params.out_offset + id] = sum;
}
