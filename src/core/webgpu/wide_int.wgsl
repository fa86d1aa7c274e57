// Exact unsigned 64-bit arithmetic on (lo, hi) u32 pairs, for WGSL sources that count exactly (WGSL has no 64-bit
// integers). Prepended to a shader's own source by compileShader (shader.ts): virtual_detector.wgsl, com.wgsl.

// a * b as an exact 64-bit (lo, hi) pair.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let p11 = a1 * b1;
  let mid = p01 + p10;
  let mid_carry = select(0u, 1u, mid < p01);  // a carry out of mid is worth 2^48
  let lo = p00 + (mid << 16u);
  let lo_carry = select(0u, 1u, lo < p00);
  let hi = p11 + (mid >> 16u) + (mid_carry << 16u) + lo_carry;
  return vec2<u32>(lo, hi);
}

fn add_wide(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  let carry = select(0u, 1u, lo < a.x);
  return vec2<u32>(lo, a.y + b.y + carry);
}
