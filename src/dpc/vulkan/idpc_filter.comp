#version 450
// iDPC on vulkan, step 2 (between VkFFT's forward and inverse C2C): Z = F[G_row + i G_col] holds both spectra,
// F[G_row](k) = (Z(k) + conj Z(-k)) / 2 and F[G_col](k) = (Z(k) - conj Z(-k)) / 2i; each is filtered as the
// reference does (dpc/idpc_backend.hpp idpc_coefficient: scale (kr Fr + kc Fc) / (2 pi i k^2), Nyquist odd terms
// zeroed, k = 0 -> 0). In place: the thread of k (k <= its partner m = -k) writes both k and m.
layout(local_size_x = 128) in;
layout(std430, binding = 0) buffer Z { vec2 z[]; };
layout(push_constant) uniform Push {
  uint nr, nc;
  float step_row, step_col, scale;
} pc;

float signed_frequency(uint i, uint n) { return i <= (n - 1u) / 2u ? float(i) : float(i) - float(n); }

vec2 coefficient(uint i, uint j, vec2 fr, vec2 fc) {
  if (i == 0u && j == 0u) return vec2(0.0);
  const float kr = signed_frequency(i, pc.nr) / (float(pc.nr) * pc.step_row);
  const float kc = signed_frequency(j, pc.nc) / (float(pc.nc) * pc.step_col);
  const float k2 = kr * kr + kc * kc;
  const float kr_num = (pc.nr % 2u == 0u && i == pc.nr / 2u) ? 0.0 : kr;
  const float kc_num = (pc.nc % 2u == 0u && j == pc.nc / 2u) ? 0.0 : kc;
  const vec2 num = kr_num * fr + kc_num * fc;
  const float d = pc.scale / (6.283185307179586 * k2);
  return vec2(num.y * d, -num.x * d);  // num / (2 pi i k2) = -i num / (2 pi k2)
}

vec2 conj_(vec2 a) { return vec2(a.x, -a.y); }

void main() {
  const uint k = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u + gl_LocalInvocationID.x;
  if (k >= pc.nr * pc.nc) return;
  const uint i = k / pc.nc, j = k % pc.nc;
  const uint mi = (pc.nr - i) % pc.nr, mj = (pc.nc - j) % pc.nc, m = mi * pc.nc + mj;
  if (m < k) return;  // the partner's thread writes both
  const vec2 zk = z[k], zm = conj_(z[m]);
  const vec2 fr = 0.5 * (zk + zm);
  const vec2 d = 0.5 * (zk - zm);
  const vec2 fc = vec2(d.y, -d.x);  // d / i
  const vec2 out_k = coefficient(i, j, fr, fc);
  z[k] = out_k;
  if (m != k) z[m] = coefficient(mi, mj, conj_(fr), conj_(fc));
}
