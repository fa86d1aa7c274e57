// display/scaling.hpp in GLSL: the same IEEE double operations in the same order (every double temporary
// `precise`, so no fused multiply-add), no library logarithm, so colour indices equal the CPU reference's bit for
// bit. Needs shaderFloat64. Shaders including this define nothing else named like these.

bool is_finite_(float v) { return (floatBitsToUint(v) & 0x7f800000u) != 0x7f800000u; }

double det_log(double x) {
  const uvec2 u = unpackDouble2x32(x);  // (low word, high word)
  int e = int((u.y >> 20) & 0x7ffu) - 1023;
  precise double m = packDouble2x32(uvec2(u.x, (u.y & 0x000fffffu) | 0x3ff00000u));  // m in [1, 2)
  if (m > 1.4142135623730951LF) {
    m = m * 0.5LF;
    e = e + 1;
  }
  precise const double f = m - 1.0LF;
  precise const double s = f / (2.0LF + f);
  precise const double s2 = s * s;
  precise double p = 1.0LF / 21.0LF;
  p = p * s2 + 1.0LF / 19.0LF;
  p = p * s2 + 1.0LF / 17.0LF;
  p = p * s2 + 1.0LF / 15.0LF;
  p = p * s2 + 1.0LF / 13.0LF;
  p = p * s2 + 1.0LF / 11.0LF;
  p = p * s2 + 1.0LF / 9.0LF;
  p = p * s2 + 1.0LF / 7.0LF;
  p = p * s2 + 1.0LF / 5.0LF;
  p = p * s2 + 1.0LF / 3.0LF;
  p = p * s2 + 1.0LF;
  precise const double log_m = 2.0LF * s * p;
  const double kLn2Hi = 6.93147180369123816490e-01LF;
  const double kLn2Lo = 1.90821492927058770002e-10LF;
  precise const double de = double(e);
  precise const double r = de * kLn2Hi + (de * kLn2Lo + log_m);
  return r;
}

double det_log1p(double x) {
  precise const double u = 1.0LF + x;
  if (u == 1.0LF) return x;
  precise const double r = det_log(u) * (x / (u - 1.0LF));
  return r;
}

// scale: 0 linear, 1 log, 2 signed_log (display/scale.hpp order)
float scale_value(float v, uint scale) {
  if (v == 0.0) return 0.0;
  if (scale == 1u) return v > 0.0 ? float(det_log1p(double(v))) : 0.0;
  if (scale == 2u) {
    const float a = float(det_log1p(double(v > 0.0 ? v : -v)));
    return v > 0.0 ? a : -a;
  }
  return v;
}

uint color_index(float s, double lo, double hi) {
  if (!(hi > lo)) return 0u;
  precise const double t = (double(s) - lo) / (hi - lo) * 255.0LF + 0.5LF;
  if (!(t > 0.0LF)) return 0u;
  if (t >= 255.0LF) return 255u;
  return uint(t);
}
