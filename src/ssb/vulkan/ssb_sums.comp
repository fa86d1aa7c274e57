#version 450
// SSB on vulkan, step 3 (after the batched VkFFT of the gathered groups): for every half-spectrum Q = (i, j),
// j <= nc / 2, the sums over the K groups of one G chunk: num += G(K, Q) conj(Gamma(K, Q)), den += w_K |Gamma|^2
// (unit_gamma: conj(Gamma) / |Gamma| where |Gamma| > 1e-3, the phase weighting). The arithmetic of ssb_math.hpp
// (chi, gamma, accumulate) in float, as the CUDA engine's sum_kernel: a tile of the K table and chi(K) in shared
// memory, the K loop split into segments (partials [segment][q], added in a fixed order on the host).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer G { vec2 g[]; };       // this chunk: [group][row][col], full spectrum
layout(std430, binding = 1) readonly buffer KTable { vec4 kt[]; };  // (ky, kx, w, 0) of every group
layout(std430, binding = 2) buffer Num { vec2 num[]; };            // [segment][nr * nch]
layout(std430, binding = 3) buffer Den { float den[]; };
layout(push_constant) uniform Push {
  uint nr, nc, nch;
  uint count;     // groups in this chunk
  uint k0;        // K table index of the chunk's first group
  uint seg_len;   // groups per segment
  uint blocks;    // work groups per segment (over the half spectrum)
  uint segments;
  uint unit_gamma;
  float dqy, dqx, kmax2;
  float two_pi_over_lambda, lambda, c1, c3, a1, a1_cos, a1_sin, b2, b2_cos, b2_sin, a2, a2_cos, a2_sin;
} pc;

shared vec4 sk[256];
shared float schi[256];

const float kUnitGammaThreshold = 1e-3;

float chi(float ky, float kx) {
  const float l = pc.lambda;
  const float w2 = l * l * (kx * kx + ky * ky);
  const float re2 = l * l * ((kx * kx - ky * ky) * pc.a1_cos + 2.0 * kx * ky * pc.a1_sin);
  const float re1 = l * (kx * pc.b2_cos + ky * pc.b2_sin);
  const float re3 = l * l * l * ((kx * kx * kx - 3.0 * kx * ky * ky) * pc.a2_cos + (3.0 * kx * kx * ky - ky * ky * ky) * pc.a2_sin);
  const float s = pc.c1 * w2 / 2.0 + pc.a1 * re2 / 2.0 + pc.b2 * w2 * re1 / 3.0 + pc.a2 * re3 / 3.0 + pc.c3 * w2 * w2 / 4.0;
  return pc.two_pi_over_lambda * s;
}

// (cos x, sin x) after reducing x to [-pi, pi] (GPU sin / cos lose accuracy far from zero).
vec2 cis(float x) {
  const float r = x - 6.28318530717958647692 * round(x * 0.15915494309189533577);
  return vec2(cos(r), sin(r));
}

int signed_frequency(uint i, uint n) { return i <= (n - 1u) / 2u ? int(i) : int(i) - int(n); }

void main() {
  const uint lin = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (lin >= pc.blocks * pc.segments) return;  // uniform over the work group
  const uint segment = lin / pc.blocks, block = lin % pc.blocks;
  const uint nq = pc.nr * pc.nch;
  const uint q = block * 256u + gl_LocalInvocationID.x;
  const uint kbeg = segment * pc.seg_len, kend = min(pc.count, kbeg + pc.seg_len);
  bool live = q < nq;
  const uint i = live ? q / pc.nch : 0u, j = live ? q % pc.nch : 0u;
  const float qy = float(signed_frequency(i, pc.nr)) * pc.dqy, qx = float(j) * pc.dqx;
  const bool dropped = (i == 0u && j == 0u) || (pc.nr % 2u == 0u && i == pc.nr / 2u) || (pc.nc % 2u == 0u && j == pc.nc / 2u);
  live = live && !dropped && qy * qy + qx * qx <= 4.0 * pc.kmax2;
  float nre = 0.0, nim = 0.0, dn = 0.0;
  for (uint tile = kbeg; tile < kend; tile += 256u) {
    const uint t = tile + gl_LocalInvocationID.x;
    if (t < kend) {
      const vec4 k = kt[pc.k0 + t];
      sk[gl_LocalInvocationID.x] = k;
      schi[gl_LocalInvocationID.x] = chi(k.x, k.y);
    }
    barrier();
    const uint m = min(256u, kend - tile);
    if (live)
      for (uint kk = 0u; kk < m; ++kk) {
        const vec4 k = sk[kk];
        const float my = k.x - qy, mx = k.y - qx, py = k.x + qy, px = k.y + qx;
        const bool minus = my * my + mx * mx <= pc.kmax2, plus = py * py + px * px <= pc.kmax2;
        if (!minus && !plus) continue;
        float gr = 0.0, gi = 0.0;
        if (minus) {
          const vec2 e = cis(schi[kk] - chi(my, mx));
          gr += e.x;
          gi += e.y;
        }
        if (plus) {
          const vec2 e = cis(chi(py, px) - schi[kk]);
          gr -= e.x;
          gi -= e.y;
        }
        if (pc.unit_gamma != 0u) {
          const float m2 = gr * gr + gi * gi;
          if (m2 <= kUnitGammaThreshold * kUnitGammaThreshold) continue;
          const float inv = inversesqrt(m2);
          gr *= inv;
          gi *= inv;
        }
        const vec2 v = g[(tile + kk) * pc.nr * pc.nc + i * pc.nc + j];
        nre += v.x * gr + v.y * gi;
        nim += v.y * gr - v.x * gi;
        dn += k.z * (gr * gr + gi * gi);
      }
    barrier();
  }
  if (q < nq) {
    const uint o = segment * nq + q;
    num[o] += vec2(nre, nim);
    den[o] += dn;
  }
}
