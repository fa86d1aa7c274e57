// SSB on the GPU-resident dataset.
//   1. gather kernel: the BF-disk pixels (summed per K group) of every frame -> [group][scan_row][padded col] float
//      (a 32x32 shared-memory transpose: reads along the detector, writes along the scan);
//   2. batched in-place cuFFT R2C over the scan (complex64 half spectrum [group][scan_rows][scan_cols/2 + 1]);
//   3. sum kernel, one thread per half-spectrum Q (grid.y splits the K loop into segments for occupancy; the
//      segment partials are added in a fixed order, so results are deterministic): num = sum_K G conj(Gamma),
//      den = sum_K w |Gamma|^2, with the K table and chi(K) staged in shared memory per tile;
//   4. reconstruct: -i Psi -> one C2R -> phi_lin (Psi is anti-Hermitian, see ssb.hpp) -> phase and amplitude in one
//      kernel (double atan2 / hypot, as the CPU reference) -> one download; fit loss: a one-block double reduction
//      of the Parseval sum (Hermitian weights 2 off the j = 0 column).
// Everything that does not depend on the aberrations is made once per engine (G, the buffers, the C2R plan, the
// Wiener rings), so an evaluation (the live defocus slider) allocates nothing.
// Memory: G needs groups * scan_rows * (scan_cols/2 + 1) * 8 bytes (512x512 scan, 3200 K: 3.4 GB). The groups that
// fit in ~85% of the free device memory stay resident; the rest are regathered and transformed in batches on
// every evaluation (slower, same result up to float summation order); beside them the low-pass part of every
// group at the viewer's scan bin (G / bin^2: ~3.5 GB of 56 GB at 4096^2, detector bin 2, scan bin 4) answers the
// scan-binned slider without a regather, bit for bit what a resident G gives. An encoded dataset's gather decodes the
// batch's BF pixels pixel-major into one buffer of at most 1/8 of the free memory (2 GiB at most;
// QGPU_SSB_GATHER_CHUNK_BYTES lowers it), in chunks of whole groups where they fit, else of part of a group
// (pixel_group_gather.cuh adds the parts): 3200 pixels x 16.7M frames (4096^2 scan) x 2 B would be 107 GB at once.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/host_bytes.hpp"
#include "core/stage_timing.hpp"
#include "detector/cuda/pixel_chunks.hpp"
#include "detector/cuda/pixel_group_gather.cuh"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_handle.hpp"
#include "device/cuda/device_buffer.hpp"
#include "device/cuda/launch.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/scan_bin.hpp"
#include "ssb/ssb_backend.hpp"
#include "ssb/ssb_math.hpp"
#include "ssb/ssb_weighting.hpp"

namespace qgpu::ssb::detail {

namespace {

constexpr int kSumThreads = 256;
constexpr int kReduceThreads = 1024;

struct SumGeometry {
  std::uint32_t nr, nc, nch;
  float dqy, dqx;  // 1/angstrom per scan-frequency index
  float kmax2;
  std::uint32_t bnr, bnc, bnch;  // the output grid: the full one, or a scan-binned one's (ssb_math.hpp full_grid_index)
};

// Adds one pass over `count` groups (G rows g[0..count), K table kt[0..count)) into the segment partials.
__global__ void __launch_bounds__(kSumThreads)
    sum_kernel(const float2* __restrict__ g, const float4* __restrict__ kt, std::uint32_t count, std::uint32_t seg_len,
               SumGeometry geo, ChiCoeffs<float> c, bool unit_gamma, float2* __restrict__ num,
               float* __restrict__ den) {
  __shared__ float4 sk[kSumThreads];
  __shared__ float schi[kSumThreads];
  const std::size_t nq = std::size_t(geo.nr) * geo.nch, bnq = std::size_t(geo.bnr) * geo.bnch;
  const std::size_t q = std::size_t(blockIdx.x) * kSumThreads + threadIdx.x;  // on the output grid
  const std::uint32_t kbeg = blockIdx.y * seg_len, kend = min(count, kbeg + seg_len);
  bool active = q < bnq;
  const std::uint32_t i = active ? std::uint32_t(q / geo.bnch) : 0, j = active ? std::uint32_t(q % geo.bnch) : 0;
  const float qy = float(signed_frequency(i, geo.bnr)) * geo.dqy, qx = float(j) * geo.dqx;
  active = active && !dropped_frequency(i, j, geo.bnr, geo.bnc) && qy * qy + qx * qx <= 4.0f * geo.kmax2;
  const std::size_t gq = full_grid_index(i, geo.bnr, geo.nr) * geo.nch + j;  // G's column of this Q
  float nre = 0, nim = 0, dn = 0;
  for (std::uint32_t tile = kbeg; tile < kend; tile += kSumThreads) {
    const std::uint32_t t = tile + threadIdx.x;
    if (t < kend) {
      const float4 k = kt[t];
      sk[threadIdx.x] = k;
      schi[threadIdx.x] = chi<float>(k.x, k.y, c);
    }
    __syncthreads();
    const std::uint32_t m = min(std::uint32_t(kSumThreads), kend - tile);
    if (active)
      for (std::uint32_t kk = 0; kk < m; ++kk) {
        const float4 k = sk[kk];
        float gr, gi;
        if (!gamma<float>(k.x, k.y, schi[kk], qy, qx, geo.kmax2, c, gr, gi)) continue;
        if (unit_gamma) {  // phase weighting: conj(Gamma) / |Gamma| where |Gamma| > 1e-3, den unused
          const float m2 = gr * gr + gi * gi;
          if (m2 <= float(kUnitGammaThreshold * kUnitGammaThreshold)) continue;
          const float inv = rsqrtf(m2);
          gr *= inv;
          gi *= inv;
        }
        const float2 v = g[std::size_t(tile + kk) * nq + gq];
        nre += v.x * gr + v.y * gi;
        nim += v.y * gr - v.x * gi;
        dn += k.z * (gr * gr + gi * gi);
      }
    __syncthreads();
  }
  if (q < bnq) {
    const std::size_t o = std::size_t(blockIdx.y) * bnq + q;
    num[o] = make_float2(num[o].x + nre, num[o].y + nim);
    den[o] += dn;
  }
}

// The low-pass part of `count` groups of G (the frequencies of the (nr / b) x (nc / b) grid, ssb_math.hpp
// full_grid_index): low[g][i][j] = g[g][full index of i][j] for i < lnr, j < lnch.
__global__ void low_pass_kernel(const float2* __restrict__ g, std::size_t count, std::uint32_t nr, std::uint32_t nch,
                                std::uint32_t lnr, std::uint32_t lnch, float2* __restrict__ low) {
  const std::size_t lnq = std::size_t(lnr) * lnch, nq = std::size_t(nr) * nch, n = count * lnq;
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < n;
       t += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t grp = t / lnq, q = t % lnq;
    const std::uint32_t i = std::uint32_t(q / lnch), j = std::uint32_t(q % lnch);
    low[t] = g[grp * nq + full_grid_index(i, lnr, nr) * nch + j];
  }
}

// spec[q] = -i Psi(q), Psi = num / (I0 N max(den, floor)) (fixed_den > 0: num / (I0 N fixed_den), the phase
// weighting), summing the `segments` partials in order.
__global__ void psi_kernel(const float2* __restrict__ num, const float* __restrict__ den, std::size_t nq,
                           std::uint32_t segments, float scale, float floor, float fixed_den,
                           float2* __restrict__ spec) {
  for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < nq;
       q += std::size_t(gridDim.x) * blockDim.x) {
    float nre = 0, nim = 0, dn = 0;
    for (std::uint32_t s = 0; s < segments; ++s) {
      nre += num[s * nq + q].x;
      nim += num[s * nq + q].y;
      dn += den[s * nq + q];
    }
    const float f = scale / (fixed_den > 0 ? fixed_den : fmaxf(dn, floor));
    spec[q] = make_float2(nim * f, -nre * f);  // -i (a + ib) = b - ia
  }
}

// num_tot[q], den_tot[q]: the `segments` partials summed in order (for the Wiener ring statistics on the host).
__global__ void total_kernel(const float2* __restrict__ num, const float* __restrict__ den, std::size_t nq,
                             std::uint32_t segments, float2* __restrict__ num_tot, float* __restrict__ den_tot) {
  for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < nq;
       q += std::size_t(gridDim.x) * blockDim.x) {
    float nre = 0, nim = 0, dn = 0;
    for (std::uint32_t s = 0; s < segments; ++s) {
      nre += num[s * nq + q].x;
      nim += num[s * nq + q].y;
      dn += den[s * nq + q];
    }
    num_tot[q] = make_float2(nre, nim);
    den_tot[q] = dn;
  }
}

// The Wiener ring power of ssb_weighting.cpp's wiener_ring_power on the GPU, one block per ring over that ring's Q
// (`order`: the Q of every ring, ring by ring, ascending; `offsets`: ring r's run), S_ring = a / b with
// a = sum m (|num|^2 - i0n den), b = sum m (i0n den)^2 (m: Hermitian multiplicity, 1 on the j = 0 column, else 2), in
// double from the float totals as the host does. Each thread adds a fixed stride of the run, then a fixed tree: the
// same order every call, so an evaluation repeats bit for bit (double atomics would not).
constexpr unsigned kRingThreads = 256;
__global__ void __launch_bounds__(kRingThreads)
    ring_power_kernel(const float2* __restrict__ num, const float* __restrict__ den, const std::uint32_t* __restrict__ order,
                      const std::uint32_t* __restrict__ offsets, std::uint32_t nch, double i0n,
                      double* __restrict__ power) {
  __shared__ double sa[kRingThreads], sb[kRingThreads];
  const std::uint32_t r = blockIdx.x, end = offsets[r + 1];
  double pa = 0, pb = 0;
  for (std::uint32_t i = offsets[r] + threadIdx.x; i < end; i += kRingThreads) {
    const std::uint32_t q = order[i];
    const double d = den[q];
    if (!(d > 0)) continue;
    const double m = q % nch == 0 ? 1.0 : 2.0, re = num[q].x, im = num[q].y, e = i0n * d;
    pa += m * ((re * re + im * im) - e);
    pb += m * e * e;
  }
  sa[threadIdx.x] = pa;
  sb[threadIdx.x] = pb;
  __syncthreads();
  for (unsigned w = kRingThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      sa[threadIdx.x] += sa[threadIdx.x + w];
      sb[threadIdx.x] += sb[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) power[r] = sb[0] > 0 ? sa[0] / sb[0] : 0.0;
}

// Wiener weighting: spec[q] = -i num / (I0 N (den + 1 / (I0 N S_ring))), 0 where S_ring <= 0 or den = 0; the ring of
// each q from the host (ssb_weighting.hpp), the per-ring S from ring_power_kernel.
__global__ void wiener_psi_kernel(const float2* __restrict__ num, const float* __restrict__ den,
                                  const std::int32_t* __restrict__ rings, const double* __restrict__ power,
                                  std::size_t nq, double i0n, float2* __restrict__ spec) {
  for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < nq;
       q += std::size_t(gridDim.x) * blockDim.x) {
    const double s = power[rings[q]], d = den[q];
    const float f = (s > 0 && d > 0) ? float(1.0 / (i0n * (d + 1.0 / (i0n * s)))) : 0.0f;
    spec[q] = make_float2(num[q].y * f, -num[q].x * f);  // -i (a + ib) = b - ia
  }
}

// object = 1 + i phi_lin: phase = atan2(phi, 1), amplitude = hypot(1, phi), in double as the CPU reference, rounded
// to float; out[0, n) = phase, out[n, 2n) = amplitude.
__global__ void object_kernel(const float* __restrict__ phi, std::size_t n, float* __restrict__ out) {
  for (std::size_t s = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; s < n;
       s += std::size_t(gridDim.x) * blockDim.x) {
    const double v = double(phi[s]);
    out[s] = float(atan2(v, 1.0));
    out[n + s] = float(hypot(1.0, v));
  }
}

// out = sum_q weight(q) |num|^2 / den over the half spectrum (den > 0), one block, fixed order, double.
__global__ void __launch_bounds__(kReduceThreads)
    loss_kernel(const float2* __restrict__ num, const float* __restrict__ den, std::uint32_t nr, std::uint32_t nch,
                std::uint32_t segments, double* out) {
  __shared__ double part[kReduceThreads];
  const std::size_t nq = std::size_t(nr) * nch;
  double acc = 0;
  for (std::size_t q = threadIdx.x; q < nq; q += kReduceThreads) {
    double nre = 0, nim = 0, dn = 0;
    for (std::uint32_t s = 0; s < segments; ++s) {
      nre += num[s * nq + q].x;
      nim += num[s * nq + q].y;
      dn += den[s * nq + q];
    }
    if (dn > 0) acc += (q % nch == 0 ? 1.0 : 2.0) * (nre * nre + nim * nim) / dn;
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kReduceThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0];
}

class CudaEngine final : public Engine {
 public:
  CudaEngine(const Dataset& ds, const Plan& plan)
      : ds_(ds), plan_(plan), nr_(plan.scan_rows), nc_(plan.scan_cols), nch_(plan.scan_cols / 2 + 1),
        nq_(nr_ * nch_), groups_(plan.groups()) {
    if (nr_ > (1u << 30) || nc_ > (1u << 30) || groups_ >= (1u << 31))
      throw InvalidArgument("ssb cuda: scan or K set too large");
    if (nr_ * 2 * nch_ > std::size_t(std::numeric_limits<int>::max()))  // cuFFT's int sizes and distances
      throw InvalidArgument("ssb cuda: a " + std::to_string(nr_) + "x" + std::to_string(nc_) +
                            " scan is too large for one cuFFT transform (more than 2^31 - 1 values)");
    // K table (ky, kx, w) and the CSR pixel lists.
    std::vector<float4> kt(groups_);
    for (std::size_t g = 0; g < groups_; ++g)
      kt[g] = make_float4(float(plan_.ky[g]), float(plan_.kx[g]), float(plan_.weight[g]), 0.0f);
    d_k_ = DeviceBuffer(groups_ * sizeof(float4));
    d_k_.upload(kt.data(), d_k_.bytes());
    d_offsets_ = DeviceBuffer(plan_.offsets.size() * sizeof(std::uint32_t));
    d_offsets_.upload(plan_.offsets.data(), d_offsets_.bytes());
    d_pixels_ = DeviceBuffer(plan_.pixels.size() * sizeof(std::uint32_t));
    d_pixels_.upload(plan_.pixels.data(), d_pixels_.bytes());

    // Segments of the K loop: enough blocks to fill the GPU (~2048), at least 256 K per segment.
    const std::size_t bx = (nq_ + kSumThreads - 1) / kSumThreads;
    segments_ = std::uint32_t(std::clamp<std::size_t>(2048 / std::max<std::size_t>(bx, 1), 1,
                                                      std::max<std::size_t>(1, groups_ / 256)));
    d_num_ = DeviceBuffer(segments_ * nq_ * sizeof(float2));
    d_den_ = DeviceBuffer(segments_ * nq_ * sizeof(float));
    d_spec_ = DeviceBuffer(nq_ * sizeof(float2));
    d_phi_ = DeviceBuffer(nr_ * nc_ * sizeof(float));
    d_object_ = DeviceBuffer(2 * nr_ * nc_ * sizeof(float));
    d_loss_ = DeviceBuffer(sizeof(double));

    // Resident share of G: what fits in 85% of the free memory less 256 MiB for cuFFT work areas (the environment
    // variable QGPU_SSB_DEVICE_BUDGET_BYTES lowers the budget: a test and tuning knob). Transforms run in
    // batches of ~256 MiB of G (at most a quarter of the budget when G is streamed).
    const std::size_t bpg = group_bytes();
    std::size_t free_b = 0, total_b = 0;
    QGPU_CUDA(cudaMemGetInfo(&free_b, &total_b));
    // (a released resident kept for a reload and the pool's idle buffers count as free: an allocation that needs
    // their room frees them, device_buffer.hpp)
    free_b += kept_resident_bytes() + pooled_idle_bytes();
    double budget = 0.85 * double(free_b) - double(std::size_t(256) << 20);
    if (const char* env = std::getenv("QGPU_SSB_DEVICE_BUDGET_BYTES")) budget = std::min(budget, std::atof(env));
    const double batch_bytes = double(std::size_t(256) << 20);
    // (the dense gather's grid.y covers a batch in 32-group tiles: at most 65535 of them)
    const std::size_t max_batch = std::min<std::size_t>(groups_, std::size_t(65535) * detector::cuda::kGatherTile);
    if (double(groups_) * double(bpg) <= budget) {
      resident_ = groups_;
      batch_ = std::clamp<std::size_t>(std::size_t(batch_bytes / double(bpg)), 1, max_batch);
    } else {
      // Kept beside the resident share: the low-pass part of every group at the viewer's scan bin (its frequencies
      // only: G / bin^2), so that the scan-binned answers of a live slider (at(ab, b), b a multiple of it) need no
      // regather. When it takes at most half the budget.
      const std::size_t lb = low_pass_bin();
      if (lb > 1) {
        const std::size_t lnr = nr_ / lb, lnch = nc_ / lb / 2 + 1;
        const double low = double(groups_) * double(lnr * lnch) * sizeof(float2);
        if (low <= budget / 2) {
          low_bin_ = lb;
          lnr_ = lnr;
          lnch_ = lnch;
          d_low_ = DeviceBuffer(groups_ * lnr * lnch * sizeof(float2));
          budget -= low;
        }
      }
      batch_ = std::clamp<std::size_t>(std::size_t(std::max(0.0, std::min(batch_bytes, budget / 4)) / double(bpg)), 1, max_batch);
      const double left = budget - double(batch_ * bpg);
      resident_ = left > 0 ? std::min(groups_, std::size_t(left / double(bpg))) : 0;
      d_scratch_ = DeviceBuffer(batch_ * bpg);
    }
    device_free_ = free_b;
    if (ds_.encoded()) {  // the decode buffer: the largest batch's pixels, at most the chunk bound
      const std::size_t px_row = ds_.shape().frames() * dtype_size(ds_.dtype());
      double cap = std::min(double(std::size_t(2) << 30), double(free_b) / 8);
      if (const char* env = std::getenv("QGPU_SSB_GATHER_CHUNK_BYTES")) cap = std::min(cap, std::atof(env));
      chunk_pixels_ = std::clamp<std::size_t>(std::size_t(std::max(0.0, cap) / double(px_row)), 1,
                                              std::size_t(65535) * 256);  // decode_pixels' largest list
      std::size_t most = 0;  // pixels of the largest batch below (resident batches from 0, streamed from resident_)
      const auto widest = [&](std::size_t from, std::size_t to) {
        for (std::size_t g0 = from; g0 < to; g0 += batch_)
          most = std::max<std::size_t>(most, plan_.offsets[std::min(to, g0 + batch_)] - plan_.offsets[g0]);
      };
      widest(0, resident_);
      widest(resident_, groups_);
      d_px_ = DeviceBuffer(std::max<std::size_t>(1, std::min(chunk_pixels_, most)) * px_row);
    }
    if (resident_ > 0) d_g_ = DeviceBuffer(resident_ * bpg);
    double dc = 0;
    for (std::size_t g0 = 0; g0 < resident_; g0 += batch_) {
      const std::size_t cnt = std::min(batch_, resident_ - g0);
      transform(g0, cnt, d_g_.as<float2>() + g0 * nq_);
      keep_low_pass(d_g_.as<float2>() + g0 * nq_, g0, cnt);
      dc += dc_sum(d_g_.as<float2>() + g0 * nq_, cnt);
    }
    for (std::size_t g0 = resident_; g0 < groups_; g0 += batch_) {
      const std::size_t cnt = std::min(batch_, groups_ - g0);
      transform(g0, cnt, d_scratch_.as<float2>());
      keep_low_pass(d_scratch_.as<float2>(), g0, cnt);
      dc += dc_sum(d_scratch_.as<float2>(), cnt);
    }
    i0_ = dc / (double(nr_ * nc_) * plan_.total_weight());
    if (!(i0_ > 0)) throw InvalidArgument("ssb: the BF disk holds no counts");
  }

  ObjectImages reconstruct(const Aberrations& ab, Weighting w, std::size_t b) override {
    const std::size_t n = nr_ * nc_, br = nr_ / b, bc = nc_ / b, m = br * bc, bnq = br * (bc / 2 + 1);
    {
      const timing::Stage stage("compute");
      sums(ab, w == Weighting::phase, b);
      const double i0n = i0_ * double(n), scale = 1.0 / i0n;
      const unsigned blocks = grid_blocks(bnq, 256, 65535);
      if (w == Weighting::wiener) {
        wiener_spectrum(i0n, blocks, b);
      } else {
        psi_kernel<<<blocks, 256>>>(d_num_.as<float2>(), d_den_.as<float>(), bnq, segments_, float(scale),
                                    float(weight_floor(plan_)),
                                    w == Weighting::phase ? float(plan_.total_weight()) : 0.0f, d_spec_.as<float2>());
        QGPU_CUDA_LAUNCHED("ssb psi_kernel");
      }
      if (b != 1)  // the full grid's plan and the latest binned one: work areas within the G budget's margin
        for (auto it = inverse_.begin(); it != inverse_.end();) it = it->first != 1 && it->first != b ? inverse_.erase(it) : std::next(it);
      CufftHandle& inverse = inverse_[b];
      if (!inverse.made) {  // at the first reconstruction of this grid (a fit never makes one); its work area is
        QGPU_CUFFT(cufftPlan2d(&inverse.h, int(br), int(bc), CUFFT_C2R));  // within the 256 MiB the G budget leaves
        inverse.made = true;
      }
      QGPU_CUFFT(cufftExecC2R(inverse.h, d_spec_.as<cufftComplex>(), d_phi_.as<cufftReal>()));
      object_kernel<<<grid_blocks(m, 256, 65535), 256>>>(d_phi_.as<float>(), m, d_object_.as<float>());
      QGPU_CUDA_LAUNCHED("ssb object_kernel");
      QGPU_CUDA(cudaDeviceSynchronize());
    }
    const timing::Stage stage("transfer");
    ObjectImages out;
    out.phase = fresh_vector<float>(m);
    out.amplitude = fresh_vector<float>(m);
    d_object_.download(out.phase.data(), m * sizeof(float));
    d_object_.download(out.amplitude.data(), m * sizeof(float), m * sizeof(float));
    return out;
  }

  double loss(const Aberrations& ab) override {
    sums(ab);
    loss_kernel<<<1, kReduceThreads>>>(d_num_.as<float2>(), d_den_.as<float>(), std::uint32_t(nr_),
                                       std::uint32_t(nch_), segments_, d_loss_.as<double>());
    QGPU_CUDA_LAUNCHED("ssb loss_kernel");
    double var = 0;
    d_loss_.download(&var, sizeof(double));
    const double in = i0_ * double(nr_ * nc_);
    return -var / (in * in);
  }

  nlohmann::json describe() const override {
    return {{"fft", "cuFFT R2C complex64 half spectrum, batched over K; C2R for the object"},
            {"precision", "float32 (loss reduction in float64)"},
            {"g_cube_bytes", groups_ * group_bytes()},
            {"g_resident_bytes", resident_ * group_bytes()},
            {"g_streamed_bytes", (groups_ - resident_) * group_bytes()},  // regathered at every evaluation
            {"groups", groups_},
            {"resident_groups", resident_},
            {"streamed_groups", groups_ - resident_},
            {"g_low_pass_bin", low_bin_},  // > 0: the scan-binned answers at its multiples come from G's low-pass part
            {"g_low_pass_bytes", d_low_.bytes()},
            {"gather_chunk_pixels", chunk_pixels_},       // encoded: pixels decoded at once (0: dense gather)
            {"gather_buffer_bytes", d_px_.bytes()},
            {"fft_batch", batch_},
            {"k_segments", segments_},
            {"device_free_bytes_before_g", device_free_}};
  }

 private:
  std::size_t group_bytes() const { return nq_ * sizeof(float2); }

  // The scan bin whose low-pass G is kept when G does not fit: the viewer's display bin (resident/scan_bin.hpp);
  // QGPU_SSB_LOW_PASS_BIN sets another (a test and tuning knob; 0 or 1: none; one that does not divide the scan: none).
  std::size_t low_pass_bin() const {
    std::size_t b = display_scan_bin(nr_, nc_);
    if (const char* env = std::getenv("QGPU_SSB_LOW_PASS_BIN")) b = std::size_t(std::strtoull(env, nullptr, 10));
    return b > 1 && nr_ % b == 0 && nc_ % b == 0 ? b : 0;
  }

  // Copies the low-pass part of groups [g0, g0 + count) (transformed in `g`) into the kept one.
  void keep_low_pass(const float2* g, std::size_t g0, std::size_t count) {
    if (low_bin_ == 0) return;
    low_pass_kernel<<<grid_blocks(count * lnr_ * lnch_, 256, 65535), 256>>>(
        g, count, std::uint32_t(nr_), std::uint32_t(nch_), std::uint32_t(lnr_), std::uint32_t(lnch_),
        d_low_.as<float2>() + g0 * lnr_ * lnch_);
    QGPU_CUDA_LAUNCHED("ssb low_pass_kernel");
  }

  // Wiener weighting, all on the GPU: the summed num / den, the per-ring power (the same rings and arithmetic as
  // the CPU reference, ssb_weighting.hpp; Hermitian multiplicity 2 off the j = 0 column), then wiener_psi_kernel.
  // (Formerly the sums came to the host for the ring power: at a 2048x2048 scan most of a 90 ms slider move.)
  void wiener_spectrum(double i0n, unsigned blocks, std::size_t b) {
    const std::size_t br = nr_ / b, bc = nc_ / b, bnch = bc / 2 + 1, bnq = br * bnch;
    if (d_num_tot_.bytes() == 0) {  // the first Wiener evaluation: the buffers, kept for the next ones
      d_num_tot_ = DeviceBuffer(nq_ * sizeof(float2));
      d_den_tot_ = DeviceBuffer(nq_ * sizeof(float));
      d_rings_ = DeviceBuffer(nq_ * sizeof(std::int32_t));
      d_ring_order_ = DeviceBuffer(nq_ * sizeof(std::uint32_t));
    }
    if (rings_bin_ != b) {  // the ring of each Q of this grid (the full grid's ring of the same Q), kept per grid,
                            // and the Q of each ring in order (ring_power_kernel)
      const std::vector<std::int32_t> full = wiener_rings(plan_, true, ring_count_);
      if (ring_count_ > std::size_t(UINT32_MAX) - 1 || bnq > std::size_t(UINT32_MAX))
        throw InvalidArgument("ssb: too many Wiener rings or frequencies");
      std::vector<std::int32_t> rings(bnq);
      std::vector<std::uint32_t> offsets(ring_count_ + 1, 0), order(bnq);
      for (std::size_t i = 0; i < br; ++i)
        for (std::size_t j = 0; j < bnch; ++j) {
          const std::int32_t r = full[full_grid_index(i, br, nr_) * nch_ + j];
          rings[i * bnch + j] = r;
          ++offsets[std::size_t(r) + 1];
        }
      for (std::size_t r = 0; r < ring_count_; ++r) offsets[r + 1] += offsets[r];
      std::vector<std::uint32_t> at(offsets.begin(), offsets.end() - 1);
      for (std::size_t q = 0; q < bnq; ++q) order[at[std::size_t(rings[q])]++] = std::uint32_t(q);
      d_rings_.upload(rings.data(), bnq * sizeof(std::int32_t));
      d_ring_order_.upload(order.data(), bnq * sizeof(std::uint32_t));
      if (d_power_.bytes() < ring_count_ * sizeof(double)) {
        d_power_ = DeviceBuffer(ring_count_ * sizeof(double));
        d_ring_offsets_ = DeviceBuffer((ring_count_ + 1) * sizeof(std::uint32_t));
      }
      d_ring_offsets_.upload(offsets.data(), offsets.size() * sizeof(std::uint32_t));
      rings_bin_ = b;
    }
    total_kernel<<<blocks, 256>>>(d_num_.as<float2>(), d_den_.as<float>(), bnq, segments_, d_num_tot_.as<float2>(),
                                  d_den_tot_.as<float>());
    QGPU_CUDA_LAUNCHED("ssb total_kernel");
    ring_power_kernel<<<unsigned(ring_count_), kRingThreads>>>(
        d_num_tot_.as<float2>(), d_den_tot_.as<float>(), d_ring_order_.as<std::uint32_t>(),
        d_ring_offsets_.as<std::uint32_t>(), std::uint32_t(bnch), i0n, d_power_.as<double>());
    QGPU_CUDA_LAUNCHED("ssb ring_power_kernel");
    wiener_psi_kernel<<<blocks, 256>>>(d_num_tot_.as<float2>(), d_den_tot_.as<float>(), d_rings_.as<std::int32_t>(),
                                       d_power_.as<double>(), bnq, i0n, d_spec_.as<float2>());
    QGPU_CUDA_LAUNCHED("ssb wiener_psi_kernel");
  }

  // The cuFFT plan for a batch of `count` in-place R2C transforms (cached per batch size).
  cufftHandle plan_for(std::size_t count) {
    auto it = plans_.find(count);
    if (it != plans_.end()) return it->second->h;
    auto h = std::make_unique<CufftHandle>();
    int n[2] = {int(nr_), int(nc_)};
    int inembed[2] = {int(nr_), int(2 * nch_)}, onembed[2] = {int(nr_), int(nch_)};
    QGPU_CUFFT(cufftPlanMany(&h->h, 2, n, inembed, 1, int(nr_ * 2 * nch_), onembed, 1, int(nq_), CUFFT_R2C,
                             int(count)));
    h->made = true;
    const cufftHandle out = h->h;
    plans_.emplace(count, std::move(h));
    return out;
  }

  // Gathers groups [g0, g0 + count) into `dst` and transforms them in place.
  void transform(std::size_t g0, std::size_t count, float2* dst) {
    const Shape4D& sh = ds_.shape();
    const std::size_t nscan = sh.frames();
    const dim3 block(detector::cuda::kGatherTile, detector::cuda::kGatherTileRows),
        grid(unsigned((nscan + detector::cuda::kGatherTile - 1) / detector::cuda::kGatherTile),
             unsigned((count + detector::cuda::kGatherTile - 1) / detector::cuda::kGatherTile));
    float* out = reinterpret_cast<float*>(dst);
    if (const EncodedResident* e = ds_.encoded()) {  // decode the groups' pixels pixel-major, then sum them
      const std::size_t slab = nr_ * 2 * nch_;
      for (const detector::PixelChunk& ch : detector::pixel_chunks(plan_.offsets, g0, count, chunk_pixels_)) {
        const std::size_t a = ch.a, b = ch.b, ga = ch.ga, gb = ch.gb;
        encoded::cuda::decode_pixels(e->layout(), e->device_tiles(), d_pixels_.as<std::uint32_t>() + a, b - a,
                                     d_px_.data());
        dispatch_count_dtype(ds_.dtype(), [&](auto tag) {
          using T = decltype(tag);
          const dim3 g(grid_blocks(nscan, 256), unsigned(std::min<std::size_t>(gb - ga, 65535)));
          detector::cuda::gather_groups_pixel_major_kernel<T><<<g, 256>>>(
              d_px_.as<T>(), nscan, d_offsets_.as<std::uint32_t>(), std::uint32_t(ga), std::uint32_t(gb - ga),
              std::uint32_t(a), std::uint32_t(b), std::uint32_t(nc_), 2 * nch_, slab, out + (ga - g0) * slab);
        });
        QGPU_CUDA_LAUNCHED("ssb gather_pixel_major_kernel");
      }
      // (d_px_ is reused by the next chunk's decode and G by the transform: all on the default stream, in order)
      QGPU_CUFFT(cufftExecR2C(plan_for(count), reinterpret_cast<cufftReal*>(out), reinterpret_cast<cufftComplex*>(dst)));
      return;
    }
    dispatch_stored_dtype(ds_.dtype(), [&](auto tag) {
      using T = decltype(tag);
      detector::cuda::gather_groups_kernel<T><<<grid, block>>>(static_cast<const T*>(ds_.device_buffer().data()), sh.frame_pixels(),
                                        d_offsets_.as<std::uint32_t>(), d_pixels_.as<std::uint32_t>(),
                                        std::uint32_t(g0), std::uint32_t(count), nscan, std::uint32_t(nc_), 2 * nch_,
                                        nr_ * 2 * nch_, out);
    });
    QGPU_CUDA_LAUNCHED("ssb gather_kernel");
    QGPU_CUFFT(cufftExecR2C(plan_for(count), reinterpret_cast<cufftReal*>(out), reinterpret_cast<cufftComplex*>(dst)));
  }

  // sum over the groups of Re G(g, Q = 0), read with one strided copy.
  double dc_sum(const float2* g, std::size_t count) {
    std::vector<float2> dc(count);
    QGPU_CUDA(cudaMemcpy2D(dc.data(), sizeof(float2), g, nq_ * sizeof(float2), sizeof(float2), count,
                           cudaMemcpyDeviceToHost));
    double s = 0;
    for (const float2& v : dc) s += double(v.x);
    return s;
  }

  // One sum_kernel pass over `count` groups of G held on a grid of g_rows x g_nch frequencies (the full half
  // spectrum, or the kept low-pass part).
  void pass(const float2* g, std::size_t k0, std::size_t count, std::uint32_t segments, const ChiCoeffs<float>& c,
            bool unit_gamma, std::size_t b, std::size_t g_rows, std::size_t g_nch) {
    const std::size_t br = nr_ / b, bc = nc_ / b, bnq = br * (bc / 2 + 1);
    SumGeometry geo{std::uint32_t(g_rows), std::uint32_t(nc_), std::uint32_t(g_nch),
                    float(1.0 / (double(nr_) * plan_.step)), float(1.0 / (double(nc_) * plan_.step)),
                    float(plan_.kmax2), std::uint32_t(br), std::uint32_t(bc), std::uint32_t(bc / 2 + 1)};
    const std::uint32_t seg_len = std::uint32_t((count + segments - 1) / segments);
    const dim3 grid(unsigned((bnq + kSumThreads - 1) / kSumThreads), segments);
    sum_kernel<<<grid, kSumThreads>>>(g, d_k_.as<float4>() + k0, std::uint32_t(count), seg_len, geo, c, unit_gamma,
                                      d_num_.as<float2>(), d_den_.as<float>());
    QGPU_CUDA_LAUNCHED("ssb sum_kernel");
  }

  // num, den partials for the given aberrations: the resident pass, then the streamed batches.
  // b > 1: on the scan-binned grid's Q only (reconstruct's scan_bin), [segment][bnq].
  void sums(const Aberrations& ab, bool unit_gamma = false, std::size_t b = 1) {
    const ChiCoeffs<float> c = chi_coeffs<float>(ab, plan_.lambda);
    QGPU_CUDA(cudaMemset(d_num_.data(), 0, d_num_.bytes()));
    QGPU_CUDA(cudaMemset(d_den_.data(), 0, d_den_.bytes()));
    if (low_bin_ > 0 && b % low_bin_ == 0) {  // every group's low-pass part kept: one pass, as if G were resident
      pass(d_low_.as<float2>(), 0, groups_, segments_, c, unit_gamma, b, lnr_, lnch_);
      return;
    }
    if (resident_ > 0) pass(d_g_.as<float2>(), 0, resident_, segments_, c, unit_gamma, b, nr_, nch_);
    for (std::size_t g0 = resident_; g0 < groups_; g0 += batch_) {
      const std::size_t cnt = std::min(batch_, groups_ - g0);
      transform(g0, cnt, d_scratch_.as<float2>());
      pass(d_scratch_.as<float2>(), g0, cnt, std::uint32_t(std::min<std::size_t>(segments_, cnt)), c, unit_gamma, b,
           nr_, nch_);
    }
  }

  Dataset ds_;
  Plan plan_;
  std::size_t nr_, nc_, nch_, nq_, groups_;
  std::uint32_t segments_ = 1;
  std::size_t batch_ = 1, resident_ = 0, device_free_ = 0;
  std::size_t chunk_pixels_ = 0;  // encoded gather: pixels decoded at once into d_px_
  std::size_t low_bin_ = 0, lnr_ = 0, lnch_ = 0;  // the kept low-pass G (d_low_: [group][lnr_][lnch_]); 0: none
  DeviceBuffer d_low_;
  DeviceBuffer d_px_;
  DeviceBuffer d_k_, d_offsets_, d_pixels_, d_num_, d_den_, d_spec_, d_phi_, d_object_, d_loss_, d_g_, d_scratch_;
  std::map<std::size_t, std::unique_ptr<CufftHandle>> plans_;
  std::map<std::size_t, CufftHandle> inverse_;  // the object's C2R: full grid, latest scan bin (made when first used)
  // Wiener weighting, made at its first evaluation: the ring of each Q (of the grid of rings_bin_), the summed
  // num / den, the ring power.
  std::size_t ring_count_ = 0, rings_bin_ = 0;
  DeviceBuffer d_num_tot_, d_den_tot_, d_rings_, d_ring_order_, d_ring_offsets_, d_power_;
};

}  // namespace

std::unique_ptr<Engine> make_cuda_engine(const Dataset& ds, const Plan& plan) {
  return std::make_unique<CudaEngine>(ds, plan);
}

}  // namespace qgpu::ssb::detail
