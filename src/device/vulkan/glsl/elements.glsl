// Elements of a dense segment bound as uint words, and exact 64-bit arithmetic on uvec2 (lo, hi) without the
// shaderInt64 feature (many Android GPUs lack it): the vulkan backend's shaders include this file.
// Element kinds (push constant `kind`): 0 uint8, 1 uint16, 2 uint32, 3 int8, 4 int16, 5 int32.

// Element e of the segment as its 32-bit two's complement bits (signed kinds sign-extended).
uint element_bits(uint kind, uint e) {
  switch (kind) {
    case 0u: return bitfieldExtract(data[e >> 2], int((e & 3u) * 8u), 8);
    case 1u: return bitfieldExtract(data[e >> 1], int((e & 1u) * 16u), 16);
    case 3u: return uint(bitfieldExtract(int(data[e >> 2]), int((e & 3u) * 8u), 8));
    case 4u: return uint(bitfieldExtract(int(data[e >> 1]), int((e & 1u) * 16u), 16));
    default: return data[e];
  }
}

bool kind_signed(uint kind) { return kind >= 3u; }

// a + b modulo 2^64.
uvec2 add64(uvec2 a, uvec2 b) {
  uint carry;
  const uint lo = uaddCarry(a.x, b.x, carry);
  return uvec2(lo, a.y + b.y + carry);
}

// The 64-bit value of element bits v (sign-extended for signed kinds).
uvec2 widen(uint kind, uint v) { return uvec2(v, (kind_signed(kind) && int(v) < 0) ? 0xffffffffu : 0u); }

// v x w modulo 2^64 for an element v (sign-extended when signed) and an unsigned weight w.
uvec2 mul64(uint kind, uint v, uint w) {
  uint hi, lo;
  umulExtended(v, w, hi, lo);
  if (kind_signed(kind) && int(v) < 0) hi -= w;  // v = bits - 2^32
  return uvec2(lo, hi);
}
