#version 450
// Exact weighted sums of every frame of one segment, every pixel read (the reference's dense pass):
// sums[out_first + f][j] = sum_p w_j(p) x frame_f[p] modulo 2^64, as the CPU reference's uint64 / int64 sums.
// One work group per frame. The weights by `mode`:
//   0: K = 1, weights[p] (a dense virtual detector);
//   1: K = 1, every weight 1 (the frame totals of total-minus-complement); no weight loads;
//   2: K = 3, the CoM's 1, det_row, det_col of pixel p = row * cols + col; no weight loads;
//   3: K = 3, the masked CoM's m, m x det_row, m x det_col with m = 0 or 1: element by element, m = weights[p];
//      words and vectors: weights holds the mask as element bit masks in the frame's layout (all ones where m = 1),
//      ANDed with the loaded data, then as mode 2.
// `path` (the host's choice): 0 element by element; 1 whole 32-bit words (two 16-bit or four 8-bit elements per
// load; frame_pixels a multiple of the elements per word); 2 whole 16-byte vectors (frames of whole vectors, and
// for modes 2 and 3 rows of whole vectors), one load per 16 bytes.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Data { uint data[]; };
layout(std430, binding = 0) readonly buffer Data4 { uvec4 data4[]; };  // the same segment, 16 bytes at a time
layout(std430, binding = 1) readonly buffer Weights { uint weights[]; };
layout(std430, binding = 1) readonly buffer Weights4 { uvec4 weights4[]; };
layout(std430, binding = 2) buffer Sums { uvec2 sums[]; };
layout(push_constant) uniform Push {
  uint frame_pixels;
  uint frames;     // frames in this segment
  uint out_first;  // global index of the segment's first frame
  uint kind;
  uint k;
  uint mode;
  uint cols;  // det_cols (modes 2 and 3)
  uint path;  // 0: element by element; 1: 32-bit words; 2: 16-byte vectors (chosen by the host, see sums_vulkan.cpp)
} pc;
#include "device/vulkan/glsl/elements.glsl"

shared uvec2 partial[3][128];
uvec2 acc0, acc1, acc2;  // the K sums (plain variables: no dynamically indexed private array)

// Element i of a 32-bit word of `kind` elements (32-bit kinds: the word itself).
uint word_element(uint kind, uint word, uint i) {
  switch (kind) {
    case 0u: return bitfieldExtract(word, int(i * 8u), 8);
    case 1u: return bitfieldExtract(word, int(i * 16u), 16);
    case 3u: return uint(bitfieldExtract(int(word), int(i * 8u), 8));
    case 4u: return uint(bitfieldExtract(int(word), int(i * 16u), 16));
    default: return word;
  }
}

// Adds pixel p (at det row r, col c) with element bits v to the sums.
void add_pixel(uint kind, uint v, uint p, uint r, uint c) {
  if (v == 0u) return;
  if (pc.mode == 1u) {
    acc0 = add64(acc0, widen(kind, v));
  } else if (pc.mode == 0u) {
    acc0 = add64(acc0, mul64(kind, v, weights[p]));
  } else {
    const uint m = pc.mode == 3u && pc.path == 0u ? weights[p] : 1u;  // words, vectors: the mask already ANDed
    if (m == 0u) return;
    acc0 = add64(acc0, mul64(kind, v, m));
    acc1 = add64(acc1, mul64(kind, v, m * r));
    acc2 = add64(acc2, mul64(kind, v, m * c));
  }
}

// Pixel p at (r, c) moved on by `stride` pixels (dr rows and dc < cols columns).
void advance(inout uint p, inout uint r, inout uint c, uint stride, uint dr, uint dc) {
  p += stride;
  r += dr;
  c += dc;
  if (c >= pc.cols) {
    c -= pc.cols;
    ++r;
  }
}

// The frame's sums into acc, element by element (any frame size) or a 32-bit word of `per` elements at a time.
// kind and per are literals at every call, so each call is compiled for its element kind.
void run(uint f, uint t, uint kind, uint per) {
  const uint n = pc.frame_pixels / per;  // loads per frame
  const uint base = f * n;               // the frame's first word (per > 1) or element (per == 1)
  const uint stride = 128u * per;        // pixels between a thread's loads
  const uint dr = stride / pc.cols, dc = stride % pc.cols;
  uint p = t * per, r = p / pc.cols, c = p % pc.cols;
  for (uint i = t; i < n; i += 128u) {
    if (per == 1u) {
      add_pixel(kind, element_bits(kind, base + i), p, r, c);
    } else {
      uint word = data[base + i];
      if (pc.mode == 3u) word &= weights[i];  // the mask as element bit masks (mode 2 from here on)
      if (word != 0u) {
        uint ri = r, ci = c;
        for (uint e = 0u; e < per; ++e) {
          add_pixel(kind, word_element(kind, word, e), p + e, ri, ci);
          if (++ci == pc.cols) {
            ci = 0u;
            ++ri;
          }
        }
      }
    }
    advance(p, r, c, stride, dr, dc);
  }
}

// The `per` elements of a word at pixels p.. (row r, columns c..; a vector's elements share one row).
void add_word(uint kind, uint per, uint word, uint p, uint r, uint c) {
  for (uint e = 0u; e < per; ++e) add_pixel(kind, word_element(kind, word, e), p + e, r, c + e);
}

// Adds a word's elements to vs and their column offsets (e0 + e) times the elements to vc.
void word_moments(uint kind, uint per, uint word, uint e0, inout uint vs, inout uint vc) {
  for (uint e = 0u; e < per; ++e) {
    const uint x = word_element(kind, word, e);
    vs += x;
    vc += x * (e0 + e);
  }
}

// The same 16 bytes at a time (frames of whole 16-byte vectors; modes 2 and 3: rows of whole vectors, so a vector's
// elements share one detector row). 8- and 16-bit kinds, modes 1 to 3: a vector's sum and column moment are exact in
// 32 bits (at most 16 x 255 and 8 x 65535 x 7 in magnitude), so the 64-bit arithmetic runs once per vector.
// One vector at pixels p.. (row r, columns c..).
void add_vector(uint kind, uint per, uvec4 q, uint p, uint r, uint c) {
  if (!any(notEqual(q, uvec4(0u)))) return;
  if (pc.mode == 0u || per == 1u) {
    add_word(kind, per, q.x, p, r, c);
    add_word(kind, per, q.y, p + per, r, c + per);
    add_word(kind, per, q.z, p + 2u * per, r, c + 2u * per);
    add_word(kind, per, q.w, p + 3u * per, r, c + 3u * per);
    return;
  }
  uint vs = 0u, vc = 0u;  // two's complement for signed kinds (the true values fit in 32 bits)
  word_moments(kind, per, q.x, 0u, vs, vc);
  word_moments(kind, per, q.y, per, vs, vc);
  word_moments(kind, per, q.z, 2u * per, vs, vc);
  word_moments(kind, per, q.w, 3u * per, vs, vc);
  acc0 = add64(acc0, widen(kind, vs));
  if (pc.mode != 1u) {
    acc1 = add64(acc1, mul64(kind, vs, r));
    acc2 = add64(add64(acc2, mul64(kind, vs, c)), widen(kind, vc));
  }
}


void run_vec(uint f, uint t, uint kind, uint per) {
  const uint K = 4u * per;  // elements per vector
  const uint n = pc.frame_pixels / K;
  const uint base = f * n;
  const uint stride = 128u * K;
  const uint dr = stride / pc.cols, dc = stride % pc.cols;
  uint p = t * K, r = p / pc.cols, c = p % pc.cols;
  // Two vectors per iteration, both loads issued before either is used (more bytes in flight per thread).
  for (uint i = t; i < n; i += 256u) {
    const bool two = i + 128u < n;
    uvec4 q0 = data4[base + i];
    uvec4 q1 = two ? data4[base + i + 128u] : uvec4(0u);
    if (pc.mode == 3u) {
      q0 &= weights4[i];
      if (two) q1 &= weights4[i + 128u];
    }
    add_vector(kind, per, q0, p, r, c);
    advance(p, r, c, stride, dr, dc);
    add_vector(kind, per, q1, p, r, c);
    advance(p, r, c, stride, dr, dc);
  }
}

void main() {
  const uint f = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (f >= pc.frames) return;  // uniform over the work group
  const uint t = gl_LocalInvocationID.x;
  acc0 = acc1 = acc2 = uvec2(0u);
  if (pc.path == 2u) {
    switch (pc.kind) {
      case 0u: run_vec(f, t, 0u, 4u); break;
      case 1u: run_vec(f, t, 1u, 2u); break;
      case 3u: run_vec(f, t, 3u, 4u); break;
      case 4u: run_vec(f, t, 4u, 2u); break;
      case 2u: run_vec(f, t, 2u, 1u); break;
      default: run_vec(f, t, 5u, 1u); break;
    }
  } else {
    const bool packed = pc.path == 1u;
    switch (pc.kind) {
      case 0u: if (packed) run(f, t, 0u, 4u); else run(f, t, 0u, 1u); break;
      case 1u: if (packed) run(f, t, 1u, 2u); else run(f, t, 1u, 1u); break;
      case 3u: if (packed) run(f, t, 3u, 4u); else run(f, t, 3u, 1u); break;
      case 4u: if (packed) run(f, t, 4u, 2u); else run(f, t, 4u, 1u); break;
      case 2u: run(f, t, 2u, 1u); break;
      default: run(f, t, 5u, 1u); break;
    }
  }
  partial[0][t] = acc0;
  partial[1][t] = acc1;
  partial[2][t] = acc2;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (t < s)
      for (uint j = 0u; j < pc.k; ++j) partial[j][t] = add64(partial[j][t], partial[j][t + s]);
    barrier();
  }
  if (t < pc.k) sums[(pc.out_first + f) * pc.k + t] = partial[t][0];
}
