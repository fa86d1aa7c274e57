#version 450
// Bitshuffle + LZ4 decode (HDF5 filter 32008) in a Vulkan compute shader, the algorithm of the browser's WGSL
// decoder (io/hdf5/webgpu/bitshuffle_lz4.wgsl). The host walks each chunk's block framing (every length checked,
// io/hdf5/vulkan/load_vulkan.cpp) and gives one descriptor per block; one work group decodes one block: invocation 0
// runs the raw LZ4 block into shared memory (every offset and length checked against the block and the output),
// then all 64 invocations turn the bit planes back into elements, one output word (4 bytes) each, at the block's
// place in the output segment (blocks start and end on word boundaries: the host requires frames of whole words).
// A verbatim tail (n % 8 elements, kind 1) is copied; plain frame records (NumPy, raw, MRC, ...: the io/source
// readers' plain codec) are one verbatim descriptor each (kind 1; kind 2 swaps each element's bytes: big-endian). Failures set the chunk's status (atomicMax): 0 ok, 1 input
// overrun, 2 output overrun, 3 bad match offset, 4 decoded size differs from the block's. Blocks of at most 8192
// bytes (the default block of every dtype).
layout(local_size_x = 64) in;
struct Block {
  uint src;    // byte offset of the block's bytes in `input`
  uint len;    // compressed bytes (kind 1: the verbatim bytes)
  uint dst;    // first output word in the segment
  uint bytes;  // decoded bytes (a multiple of 4)
  uint chunk;  // chunk of the batch, for the status
  uint kind;   // 0 LZ4 + bit planes, 1 verbatim bytes, 2 verbatim elements byte-swapped (elem_size 2 or 4)
  uint pad0, pad1;
};
layout(std430, binding = 0) readonly buffer Input { uint input_words[]; };
layout(std430, binding = 1) readonly buffer Blocks { Block blocks[]; };
layout(std430, binding = 2) writeonly buffer Output { uint output_words[]; };
layout(std430, binding = 3) buffer Status { uint status[]; };
layout(push_constant) uniform Push {
  uint blocks, elem_size;
  uint first;  // this dispatch's first descriptor (one dispatch per output segment)
} pc;

const uint kMaxBlockBytes = 8192u;
shared uint planes[kMaxBlockBytes / 4u];
shared uint block_status;

uint in_byte(uint i) { return (input_words[i >> 2] >> ((i & 3u) * 8u)) & 0xffu; }
uint plane_byte(uint i) { return (planes[i >> 2] >> ((i & 3u) * 8u)) & 0xffu; }
void put_plane_byte(uint i, uint v) {
  const uint sh = (i & 3u) * 8u, w = i >> 2;
  planes[w] = (planes[w] & ~(0xffu << sh)) | (v << sh);
}

// Raw LZ4 block [src, src + len) into planes[0 .. out_len). Returns a status code.
uint lz4_block(uint src, uint len, uint out_len) {
  uint ip = src;
  const uint end = src + len;
  uint op = 0u;
  for (;;) {
    if (ip >= end) return 1u;
    const uint token = in_byte(ip++);
    uint lit = token >> 4;
    if (lit == 15u) {
      for (;;) {
        if (ip >= end) return 1u;
        const uint b = in_byte(ip++);
        lit += b;
        if (b != 255u) break;
      }
    }
    if (lit > end - ip) return 1u;
    if (lit > out_len - op) return 2u;
    for (uint k = 0u; k < lit; ++k) put_plane_byte(op + k, in_byte(ip + k));
    ip += lit;
    op += lit;
    if (ip == end) break;
    if (end - ip < 2u) return 1u;
    const uint offset = in_byte(ip) | (in_byte(ip + 1u) << 8);
    ip += 2u;
    if (offset == 0u || offset > op) return 3u;
    uint ml = (token & 15u) + 4u;
    if ((token & 15u) == 15u) {
      for (;;) {
        if (ip >= end) return 1u;
        const uint b = in_byte(ip++);
        ml += b;
        if (b != 255u) break;
      }
    }
    if (ml > out_len - op) return 2u;
    for (uint k = 0u; k < ml; ++k) put_plane_byte(op + k, plane_byte(op + k - offset));
    op += ml;
  }
  return op == out_len ? 0u : 4u;
}

void main() {
  const uint bi = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (bi >= pc.blocks) return;  // uniform per work group
  const uint lid = gl_LocalInvocationID.x;
  const Block b = blocks[pc.first + bi];
  const uint words = b.bytes / 4u;
  if (b.kind != 0u) {
    const uint es = pc.elem_size;
    for (uint w = lid; w < words; w += 64u) {
      uint word = 0u;
      for (uint i = 0u; i < 4u; ++i) {
        const uint o = 4u * w + i;
        const uint from = b.kind == 1u ? o : o - o % es + (es - 1u - o % es);
        word |= in_byte(b.src + from) << (8u * i);
      }
      output_words[b.dst + w] = word;
    }
    return;
  }
  if (lid == 0u) block_status = b.bytes > kMaxBlockBytes ? 2u : lz4_block(b.src, b.len, b.bytes);
  memoryBarrierShared();
  barrier();
  const uint st = block_status;
  if (st != 0u) {
    if (lid == 0u) atomicMax(status[b.chunk], st);
    return;
  }
  // element e, byte j of it: bits 8j .. 8j + 7 of the value, bit p in plane p (stride = elements / 8 bytes) at
  // byte e >> 3, bit e & 7
  const uint es = pc.elem_size, stride = b.bytes / es / 8u;
  for (uint w = lid; w < words; w += 64u) {
    uint word = 0u;
    for (uint i = 0u; i < 4u; ++i) {
      const uint o = 4u * w + i, e = o / es, j = o % es;
      uint v = 0u;
      for (uint t = 0u; t < 8u; ++t) v |= ((plane_byte((8u * j + t) * stride + (e >> 3)) >> (e & 7u)) & 1u) << t;
      word |= v << (8u * i);
    }
    output_words[b.dst + w] = word;
  }
}
