// Bitshuffle + LZ4 decode (HDF5 filter 32008) in a WebGPU compute shader. The host walks each chunk's block
// framing (bitshuffle_ref.ts planChunk: every length checked) and gives one descriptor per block; here one
// workgroup decodes one block: invocation 0 runs the raw LZ4 block into workgroup memory (every offset and
// length checked against the block and the output), then all 64 invocations turn the bit planes back into
// elements, widened to u32, at the block's place in the output. A verbatim tail (n % 8 elements) is copied.
// Failures set the chunk's status (atomicMax): 0 ok, 1 input overrun, 2 output overrun, 3 bad match offset,
// 4 decoded size differs from the block's. Block bytes are at most 8192 (the default block of every dtype).

struct Block {
  src: u32,     // byte offset of the block's bytes in `input`
  len: u32,     // compressed bytes (raw: element bytes)
  dst: u32,     // first output element
  nelem: u32,   // elements in the block
  chunk: u32,   // chunk index, for the status
  kind: u32,    // 0 LZ4 + bit planes, 1 raw little-endian elements
  pad0: u32,
  pad1: u32,
}

struct Params {
  blocks: u32,
  elem_size: u32,
  groups_x: u32,
  pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read> blocks: array<Block>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;

const MAX_BLOCK_BYTES: u32 = 8192u;
var<workgroup> planes: array<u32, 2048>;  // MAX_BLOCK_BYTES / 4
var<workgroup> block_status: u32;

fn in_byte(i: u32) -> u32 {
  return (input[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn plane_byte(i: u32) -> u32 {
  return (planes[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn put_plane_byte(i: u32, v: u32) {
  let sh = (i & 3u) * 8u;
  let w = i >> 2u;
  planes[w] = (planes[w] & ~(0xffu << sh)) | (v << sh);
}

// Raw LZ4 block [src, src + len) into planes[0 .. out_len). Returns a status code.
fn lz4_block(src: u32, len: u32, out_len: u32) -> u32 {
  var ip = src;
  let end = src + len;
  var op = 0u;
  loop {
    if (ip >= end) { return 1u; }
    let token = in_byte(ip);
    ip = ip + 1u;
    var lit = token >> 4u;
    if (lit == 15u) {
      loop {
        if (ip >= end) { return 1u; }
        let b = in_byte(ip);
        ip = ip + 1u;
        lit = lit + b;
        if (b != 255u) { break; }
      }
    }
    if (lit > end - ip) { return 1u; }
    if (lit > out_len - op) { return 2u; }
    for (var k = 0u; k < lit; k = k + 1u) {
      put_plane_byte(op + k, in_byte(ip + k));
    }
    ip = ip + lit;
    op = op + lit;
    if (ip == end) { break; }
    if (end - ip < 2u) { return 1u; }
    let offset = in_byte(ip) | (in_byte(ip + 1u) << 8u);
    ip = ip + 2u;
    if (offset == 0u || offset > op) { return 3u; }
    var ml = (token & 15u) + 4u;
    if ((token & 15u) == 15u) {
      loop {
        if (ip >= end) { return 1u; }
        let b = in_byte(ip);
        ip = ip + 1u;
        ml = ml + b;
        if (b != 255u) { break; }
      }
    }
    if (ml > out_len - op) { return 2u; }
    for (var k = 0u; k < ml; k = k + 1u) {
      put_plane_byte(op + k, plane_byte(op + k - offset));
    }
    op = op + ml;
  }
  if (op != out_len) { return 4u; }
  return 0u;
}

@compute @workgroup_size(64)
fn decode_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let bi = wid.x + wid.y * params.groups_x;
  if (bi >= params.blocks) {
    return;  // uniform per workgroup
  }
  let b = blocks[bi];
  let es = params.elem_size;
  if (b.kind == 1u) {
    for (var n = lid; n < b.nelem; n = n + 64u) {
      var v = 0u;
      for (var k = 0u; k < es; k = k + 1u) {
        v = v | (in_byte(b.src + n * es + k) << (8u * k));
      }
      output[b.dst + n] = v;
    }
    return;
  }
  let out_len = b.nelem * es;
  if (lid == 0u) {
    if (out_len > MAX_BLOCK_BYTES) {
      block_status = 2u;
    } else {
      block_status = lz4_block(b.src, b.len, out_len);
    }
  }
  let st = workgroupUniformLoad(&block_status);
  if (st != 0u) {
    if (lid == 0u) {
      atomicMax(&status[b.chunk], st);
    }
    return;
  }
  let stride = b.nelem / 8u;
  let bits = 8u * es;
  for (var n = lid; n < b.nelem; n = n + 64u) {
    let byte = n >> 3u;
    let bit = n & 7u;
    var v = 0u;
    for (var p = 0u; p < bits; p = p + 1u) {
      v = v | (((plane_byte(p * stride + byte) >> bit) & 1u) << p);
    }
    output[b.dst + n] = v;
  }
}
