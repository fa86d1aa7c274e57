// CUDA parallax engine on the GPU-resident dataset (dense or encoded):
//   gather kernel (BF-disk groups summed per frame, shared-memory transpose to [group][scan]) -> per-group
//   normalisation v = I / mean - 1 -> batched cuFFT R2C of every W v_g (W the plan's edge window), kept resident
//   (complex64 half spectra);
//   reference: one thread per half-spectrum frequency summing the weighted phase-ramped spectra, the window's ramps
//   (envelope) and, with the sideband model on, the class sums (parallax_backend.hpp);
//   correlate: spectrum x conj(reference, or the group's class model, minus the group's own term) x the smoothing
//   Gaussian + batched C2R + one block per group for the peak of the correlation over the envelope and its parabola;
//   upsampled sum: one thread per (group, scan position) splatting bilinearly with float atomics, then normalised.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/numbers.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "detector/cuda/pixel_group_gather.cuh"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/cufft_check.hpp"
#include "device/cuda/cufft_handle.hpp"
#include "device/cuda/device_buffer.hpp"
#include "device/cuda/launch.hpp"
#include "parallax/parallax.hpp"
#include "parallax/parallax_backend.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::parallax::detail {

namespace {

constexpr int kThreads = 256;

// One block per group: v = x / mean(x) - 1 in place; flags a group without counts.
__global__ void normalise_kernel(float* __restrict__ v, std::size_t nscan, int* __restrict__ empty) {
  __shared__ double part[kThreads];
  float* x = v + std::size_t(blockIdx.x) * nscan;
  double sum = 0;
  for (std::size_t s = threadIdx.x; s < nscan; s += kThreads) sum += x[s];
  part[threadIdx.x] = sum;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  const double mean = part[0] / double(nscan);
  if (!(mean > 0)) {
    if (threadIdx.x == 0) *empty = 1;
    return;
  }
  const float inv = float(1.0 / mean);
  for (std::size_t s = threadIdx.x; s < nscan; s += kThreads) x[s] = x[s] * inv - 1.0f;
}

// out[s] = mean over groups of v[g][s].
__global__ void mean_kernel(const float* __restrict__ v, std::size_t nscan, std::uint32_t groups, float* __restrict__ out) {
  const std::size_t s = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= nscan) return;
  double acc = 0;
  for (std::uint32_t g = 0; g < groups; ++g) acc += v[std::size_t(g) * nscan + s];
  out[s] = float(acc / double(groups));
}

__device__ bool is_nyquist(std::uint32_t i, std::uint32_t j, std::uint32_t nr, std::uint32_t nc) {
  return (nr % 2 == 0 && i == nr / 2) || (nc % 2 == 0 && j == nc / 2);
}

// exp(+2 pi i Q.s) at half-spectrum index (i, j), as (cos, sin); the phase reduced to [-1, 1) turns first.
__device__ float2 ramp(std::uint32_t i, std::uint32_t j, std::uint32_t nr, std::uint32_t nc, double2 s) {
  const double fi = double(signed_frequency(i, nr, true)) / double(nr), fj = double(j) / double(nc);
  const double t = fi * s.x + fj * s.y;
  float sn, cs;
  sincospif(float(2.0 * (t - rint(t))), &sn, &cs);
  return make_float2(cs, sn);
}

// The sideband model on the device (see sideband_model in parallax_backend.hpp); on = 0: the plain reference.
struct SidebandArgs {
  int on = 0;
  double k_aperture = 0, q_row = 0, q_col = 0;
  const double2* k = nullptr;  // per group, 1/A
};

__device__ int class_of(const SidebandArgs& sb, std::uint32_t g, std::uint32_t i, std::uint32_t j, std::uint32_t nr) {
  const double qr = double(signed_frequency(i, nr, true)) * sb.q_row, qc = double(j) * sb.q_col;
  return sideband_class(sb.k[g].x, sb.k[g].y, qr, qc, sb.k_aperture);
}

// The class sums of set_reference (sideband on): T_M, T_P and N_D, N_M, N_P (w of nsum unused) per frequency.
struct ClassSums {
  float2* tm = nullptr;
  float2* tp = nullptr;
  float4* n = nullptr;
};

// prod[b][q] = V conj(M) s(Q) for g = g0 + b: M the reference minus the group's own term w_g V ramp(s_g) (leave
// one out, see parallax_backend.hpp) or, with the sideband model on, the group's class model from the class sums
// without its own term; s the smoothing Gaussian; Nyquist = 0.
__global__ void cross_kernel(const float2* __restrict__ spec, const float2* __restrict__ ref,
                             const double2* __restrict__ ref_shift, const float* __restrict__ weight,
                             std::uint32_t g0, std::uint32_t nr, std::uint32_t nc, std::uint32_t nch,
                             std::size_t count, SidebandArgs sb, ClassSums cs, float2* __restrict__ prod) {
  const std::size_t nq = std::size_t(nr) * nch;
  const std::size_t k = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= nq * count) return;
  const std::size_t q = k % nq;
  const std::uint32_t g = g0 + std::uint32_t(k / nq), i = std::uint32_t(q / nch), j = std::uint32_t(q % nch);
  if (is_nyquist(i, j, nr, nc)) {
    prod[k] = make_float2(0, 0);
    return;
  }
  const float2 v = spec[std::size_t(g) * nq + q], e = ramp(i, j, nr, nc, ref_shift[g]);
  const float wg = weight[g];
  const float2 own = make_float2(wg * (v.x * e.x - v.y * e.y), wg * (v.x * e.y + v.y * e.x));
  float2 r;
  if (!sb.on) {
    r = make_float2(ref[q].x - own.x, ref[q].y - own.y);
  } else {
    const int cls = class_of(sb, g, i, j, nr);
    const float2 tm = cs.tm[q], tp = cs.tp[q];
    const float4 n = cs.n[q];
    const double mr = tm.x - ((cls & 1) ? own.x : 0.0f), mi = tm.y - ((cls & 1) ? own.y : 0.0f);
    const double pr = tp.x - ((cls & 2) ? own.x : 0.0f), pi = tp.y - ((cls & 2) ? own.y : 0.0f);
    double re = 0, im = 0;
    sideband_model(cls, mr, mi, pr, pi, double(n.x) - (cls == 3 ? wg : 0.0), double(n.y) - (cls == 1 ? wg : 0.0),
                   double(n.z) - (cls == 2 ? wg : 0.0), re, im);
    r = make_float2(float(re), float(im));
  }
  const float sm = float(smoothing_factor(double(signed_frequency(i, nr, true)), double(j), double(nr), double(nc)));
  prod[k] = make_float2(sm * (v.x * r.x + v.y * r.y), sm * (v.y * r.x - v.x * r.y));
}

__device__ double parabola(double m, double c, double p) {
  const double d = m - 2 * c + p;
  if (!(d < 0)) return 0;
  const double v = 0.5 * (m - p) / d;
  return v < -0.5 ? -0.5 : (v > 0.5 ? 0.5 : v);
}

__device__ long wrap(long i, long n) { return ((i % n) + n) % n; }

// One block per group of the batch: the correlation maximum in the (2w+1)^2 window around round(predicted) (first
// in window raster order among ties, as the CPU) and its parabola.
// With env (the floored envelope, see parallax_backend.hpp) every value is divided by it first.
__global__ void peak_kernel(const float* __restrict__ cc, const float* __restrict__ env, std::uint32_t nr,
                            std::uint32_t nc, std::uint32_t g0, const double2* __restrict__ predicted, std::uint32_t w,
                            double2* __restrict__ shifts) {
  __shared__ float bv[kThreads];
  __shared__ std::uint32_t bi[kThreads];
  const float* x = cc + std::size_t(blockIdx.x) * nr * nc;
  const double2 pred = predicted[g0 + blockIdx.x];
  const long pr = lround(pred.x), pc = lround(pred.y), side = 2 * long(w) + 1;
  auto at = [&](long r, long c) {
    const std::size_t idx = std::size_t(wrap(r, nr)) * nc + std::size_t(wrap(c, nc));
    return env ? x[idx] / env[idx] : x[idx];
  };
  float best = -INFINITY;
  std::uint32_t idx = 0xffffffffu;
  for (std::uint32_t k = threadIdx.x; k < std::uint32_t(side * side); k += kThreads) {
    const float v = at(pr - long(w) + long(k) / side, pc - long(w) + long(k) % side);
    if (v > best) best = v, idx = k;
  }
  bv[threadIdx.x] = best;
  bi[threadIdx.x] = idx;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      const float o = bv[threadIdx.x + s];
      const std::uint32_t oi = bi[threadIdx.x + s];
      if (o > bv[threadIdx.x] || (o == bv[threadIdx.x] && oi < bi[threadIdx.x])) bv[threadIdx.x] = o, bi[threadIdx.x] = oi;
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  const long r = pr - long(w) + long(bi[0]) / side, c = pc - long(w) + long(bi[0]) % side;
  const double dr = parabola(at(r - 1, c), at(r, c), at(r + 1, c));
  const double dc = parabola(at(r, c - 1), at(r, c), at(r, c + 1));
  shifts[g0 + blockIdx.x] = make_double2(double(r) + dr, double(c) + dc);
}

// win[g][k] = cc at window element k (raster order from round(predicted) - w) for g = g0 + b, as the CPU.
__global__ void window_kernel(const float* __restrict__ cc, const float* __restrict__ env, std::uint32_t nr,
                              std::uint32_t nc, std::uint32_t g0, std::size_t count,
                              const double2* __restrict__ predicted, std::uint32_t w, float* __restrict__ win) {
  const long side = 2 * long(w) + 1;
  const std::size_t t = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= count * std::size_t(side * side)) return;
  const std::size_t b = t / std::size_t(side * side);
  const long k = long(t % std::size_t(side * side));
  const double2 pred = predicted[g0 + b];
  const long r = lround(pred.x) - long(w) + k / side, c = lround(pred.y) - long(w) + k % side;
  const std::size_t idx = std::size_t(wrap(r, nr)) * nc + std::size_t(wrap(c, nc));
  const float value = cc[b * std::size_t(nr) * nc + idx];
  win[(std::size_t(g0) + b) * std::size_t(side * side) + std::size_t(k)] = env ? value / env[idx] : value;
}

// ref[q] = sum_g w_g spec[g][q] exp(+2 pi i Q.s_g) on the half spectrum (Nyquist row/column of even sizes = 0);
// with a window (wspec not null) also wref[q] = W(Q) sum_g w_g exp(+2 pi i Q.s_g) and envspec[q] = W(Q) conj(wref[q]);
// with the sideband model on the class sums (see parallax_backend.hpp).
__global__ void reference_kernel(const float2* __restrict__ spec, const double2* __restrict__ shifts,
                                 const float* __restrict__ weight, std::uint32_t groups, std::uint32_t nr,
                                 std::uint32_t nc, std::uint32_t nch, SidebandArgs sb, ClassSums cs,
                                 const float2* __restrict__ wspec, float2* __restrict__ wref,
                                 float2* __restrict__ envspec, float2* __restrict__ ref) {
  const std::size_t q = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t nq = std::size_t(nr) * nch;
  if (q >= nq) return;
  const std::uint32_t i = std::uint32_t(q / nch), j = std::uint32_t(q % nch);
  if (is_nyquist(i, j, nr, nc)) {
    ref[q] = make_float2(0, 0);
    if (wspec) wref[q] = envspec[q] = make_float2(0, 0);
    if (sb.on) cs.tm[q] = cs.tp[q] = make_float2(0, 0), cs.n[q] = make_float4(0, 0, 0, 0);
    return;
  }
  float ax = 0, ay = 0, ex = 0, ey = 0, mx = 0, my = 0, px = 0, py = 0, nd = 0, nm = 0, np = 0;
  for (std::uint32_t g = 0; g < groups; ++g) {
    const float wg = weight[g];
    if (wg == 0) continue;
    const float2 a = spec[std::size_t(g) * nq + q], e = ramp(i, j, nr, nc, shifts[g]);
    const float vx = wg * (a.x * e.x - a.y * e.y), vy = wg * (a.x * e.y + a.y * e.x);
    ax += vx;
    ay += vy;
    ex += wg * e.x;
    ey += wg * e.y;
    if (!sb.on) continue;
    const int cls = class_of(sb, g, i, j, nr);
    if (cls & 1) mx += vx, my += vy;
    if (cls & 2) px += vx, py += vy;
    if (cls == 3) nd += wg;
    if (cls == 1) nm += wg;
    if (cls == 2) np += wg;
  }
  ref[q] = make_float2(ax, ay);
  if (sb.on) cs.tm[q] = make_float2(mx, my), cs.tp[q] = make_float2(px, py), cs.n[q] = make_float4(nd, nm, np, 0);
  if (!wspec) return;
  const float2 w = wspec[q], rw = make_float2(w.x * ex - w.y * ey, w.x * ey + w.y * ex);
  wref[q] = rw;
  envspec[q] = make_float2(w.x * rw.x + w.y * rw.y, w.y * rw.x - w.x * rw.y);
}

// out[s] = v[g][s] * window[s] for the groups g0 .. g0 + count - 1 (the spectra's input).
__global__ void apply_window_kernel(const float* __restrict__ v, const float* __restrict__ window, std::size_t n,
                                    std::size_t count, float* __restrict__ out) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * count) out[i] = v[i] * window[i % n];
}

// One block: x[i] = max(x[i], floor_fraction * max(x)).
__global__ void floor_kernel(float* __restrict__ x, std::size_t n, float floor_fraction) {
  __shared__ float part[kThreads];
  float m = -INFINITY;
  for (std::size_t i = threadIdx.x; i < n; i += kThreads) m = fmaxf(m, x[i]);
  part[threadIdx.x] = m;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + w]);
    __syncthreads();
  }
  const float f = floor_fraction * part[0];
  for (std::size_t i = threadIdx.x; i < n; i += kThreads) x[i] = fmaxf(x[i], f);
}

__global__ void scale_kernel(float* __restrict__ x, std::size_t n, float s) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

__global__ void splat_kernel(const float* __restrict__ v, const double2* __restrict__ shifts, std::uint32_t groups,
                             std::uint32_t nr, std::uint32_t nc, std::uint32_t up, float* __restrict__ val,
                             float* __restrict__ wt) {
  const std::size_t n = std::size_t(nr) * nc;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * groups) return;
  const std::uint32_t g = std::uint32_t(i / n), s = std::uint32_t(i % n), r = s / nc, c = s % nc;
  const double2 sh = shifts[g];
  const double y = (double(r) - sh.x) * double(up), x = (double(c) - sh.y) * double(up);
  const double fy = floor(y), fx = floor(x);
  const float wy = float(y - fy), wx = float(x - fx), value = v[i];
  const long y0 = long(fy), x0 = long(fx), ur = long(nr) * up, uc = long(nc) * up;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      const long yy = y0 + a, xx = x0 + b;
      if (yy < 0 || xx < 0 || yy >= ur || xx >= uc) continue;
      const float w = (a ? wy : 1 - wy) * (b ? wx : 1 - wx);
      atomicAdd(val + yy * uc + xx, w * value);
      atomicAdd(wt + yy * uc + xx, w);
    }
}

__global__ void total_kernel(const float* __restrict__ wt, std::size_t n, double* __restrict__ total) {
  __shared__ double part[kThreads];
  double s = 0;
  for (std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += std::size_t(gridDim.x) * kThreads)
    s += wt[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, part[0]);
}

__global__ void density_kernel(float* __restrict__ val, const float* __restrict__ wt, std::size_t n,
                               const double* __restrict__ total, float floor_fraction) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float floor = float(floor_fraction * (*total / double(n)));
  val[i] = wt[i] > floor ? val[i] / wt[i] : 0.0f;
}

unsigned blocks_for(std::size_t n) { return grid_blocks(n, kThreads); }  // one item a thread: no clamp

class CudaEngine final : public Engine {
 public:
  CudaEngine(const Dataset& ds, const Plan& plan)
      : plan_(plan), nr_(plan.scan_rows), nc_(plan.scan_cols), nch_(plan.scan_cols / 2 + 1), n_(nr_ * nc_),
        nq_(nr_ * nch_), groups_(plan.groups()) {
    d_v_ = DeviceBuffer(groups_ * n_ * sizeof(float));
    d_spec_ = DeviceBuffer(groups_ * nq_ * sizeof(float2));
    d_shifts_ = DeviceBuffer(groups_ * sizeof(double2));
    d_sb_k_ = DeviceBuffer(groups_ * sizeof(double2));
    d_pred_ = DeviceBuffer(groups_ * sizeof(double2));
    d_weight_ = DeviceBuffer(groups_ * sizeof(float));
    d_ref_shift_ = DeviceBuffer(groups_ * sizeof(double2));
    QGPU_CUDA(cudaMemset(d_weight_.data(), 0, d_weight_.bytes()));
    QGPU_CUDA(cudaMemset(d_ref_shift_.data(), 0, d_ref_shift_.bytes()));
    d_offsets_ = DeviceBuffer(plan_.offsets.size() * sizeof(std::uint32_t));
    d_offsets_.upload(plan_.offsets.data(), d_offsets_.bytes());
    d_pixels_ = DeviceBuffer(plan_.pixels.size() * sizeof(std::uint32_t));
    d_pixels_.upload(plan_.pixels.data(), d_pixels_.bytes());
    gather(ds);
    DeviceBuffer d_empty(sizeof(int));
    QGPU_CUDA(cudaMemset(d_empty.data(), 0, sizeof(int)));
    normalise_kernel<<<unsigned(groups_), kThreads>>>(d_v_.as<float>(), n_, d_empty.as<int>());
    QGPU_CUDA_LAUNCHED("parallax normalise_kernel");
    int empty = 0;
    d_empty.download(&empty, sizeof(int));
    if (empty) throw InvalidArgument("parallax: a BF-disk pixel group holds no counts");
    // Spectra of every group (of W v_g with a window), resident; batches bound the cuFFT work area.
    batch_ = std::min<std::size_t>(groups_, 256);
    make_plans();
    d_ref_ = DeviceBuffer(n_ * sizeof(float));
    d_ref_spec_ = DeviceBuffer(nq_ * sizeof(float2));
    d_prod_ = DeviceBuffer(batch_ * nq_ * sizeof(float2));
    d_cc_ = DeviceBuffer(batch_ * n_ * sizeof(float));
    windowed_ = !plan_.window.empty();
    if (windowed_) {
      if (plan_.window.size() != n_) throw InvalidArgument("parallax: the window does not match the scan");
      d_window_ = DeviceBuffer(n_ * sizeof(float));
      d_window_.upload(plan_.window.data(), n_ * sizeof(float));
      d_wspec_ = DeviceBuffer(nq_ * sizeof(float2));
      d_wref_spec_ = DeviceBuffer(nq_ * sizeof(float2));
      d_env_spec_ = DeviceBuffer(nq_ * sizeof(float2));
      d_env_ = DeviceBuffer(n_ * sizeof(float));
      d_wref_ = DeviceBuffer(n_ * sizeof(float));
      QGPU_CUFFT(cufftExecR2C(r2c_one_.h, d_window_.as<cufftReal>(), d_wspec_.as<cufftComplex>()));
    }
    for (std::size_t g0 = 0; g0 < groups_; g0 += batch_) {
      const std::size_t count = std::min(batch_, groups_ - g0);
      cufftReal* in = d_v_.as<cufftReal>() + g0 * n_;
      if (windowed_) {
        apply_window_kernel<<<blocks_for(n_ * count), kThreads>>>(d_v_.as<float>() + g0 * n_, d_window_.as<float>(),
                                                                  n_, count, d_cc_.as<float>());
        QGPU_CUDA_LAUNCHED("parallax apply_window_kernel");
        in = d_cc_.as<cufftReal>();
      }
      QGPU_CUFFT(cufftExecR2C(count == batch_ ? r2c_.h : r2c_tail(count), in, d_spec_.as<cufftComplex>() + g0 * nq_));
    }
    QGPU_CUDA(cudaDeviceSynchronize());
  }

  std::vector<float> mean_image() override {
    mean_kernel<<<blocks_for(n_), kThreads>>>(d_v_.as<float>(), n_, std::uint32_t(groups_), d_ref_.as<float>());
    QGPU_CUDA_LAUNCHED("parallax mean_kernel");
    std::vector<float> out(n_);
    d_ref_.download(out.data(), n_ * sizeof(float));
    return out;
  }

  void set_reference(const std::vector<Shift>& sh, const std::vector<float>& weight) override {
    upload_shifts(sh, d_ref_shift_);
    d_weight_.upload(weight.data(), groups_ * sizeof(float));
    ref_wsum_ = 0;
    for (float w : weight) ref_wsum_ += w;
    reference_kernel<<<blocks_for(nq_), kThreads>>>(
        d_spec_.as<float2>(), d_ref_shift_.as<double2>(), d_weight_.as<float>(), std::uint32_t(groups_),
        std::uint32_t(nr_), std::uint32_t(nc_), std::uint32_t(nch_), sb_, class_sums(),
        windowed_ ? d_wspec_.as<float2>() : nullptr, windowed_ ? d_wref_spec_.as<float2>() : nullptr,
        windowed_ ? d_env_spec_.as<float2>() : nullptr, d_ref_spec_.as<float2>());
    QGPU_CUDA_LAUNCHED("parallax reference_kernel");
    if (!windowed_) return;
    // the envelope IFFT(W conj(RW)), floored (C2R may overwrite its input: the spectrum is not kept)
    QGPU_CUFFT(cufftExecC2R(c2r_one_.h, d_env_spec_.as<cufftComplex>(), d_env_.as<cufftReal>()));
    floor_kernel<<<1, kThreads>>>(d_env_.as<float>(), n_, float(kWindowFloor));
    QGPU_CUDA_LAUNCHED("parallax floor_kernel");
  }

  void set_sideband(const Sideband& sb) override {
    sb_ = SidebandArgs{};
    if (!sb.on) return;
    upload_shifts(sb.k, d_sb_k_);
    if (d_tm_.bytes() == 0) {
      d_tm_ = DeviceBuffer(nq_ * sizeof(float2));
      d_tp_ = DeviceBuffer(nq_ * sizeof(float2));
      d_n_ = DeviceBuffer(nq_ * sizeof(float4));
    }
    sb_ = {1, sb.k_aperture, sb.q_row, sb.q_col, d_sb_k_.as<double2>()};
  }

  std::vector<float> reference_image() override {
    // C2R may overwrite its input: transform a copy, the reference spectrum stays for correlate
    QGPU_CUDA(cudaMemcpy(d_prod_.data(), d_ref_spec_.data(), nq_ * sizeof(float2), cudaMemcpyDeviceToDevice));
    QGPU_CUFFT(cufftExecC2R(c2r_one_.h, d_prod_.as<cufftComplex>(), d_ref_.as<cufftReal>()));
    std::vector<float> out(n_);
    if (windowed_) {  // IFFT(R) / IFFT(RW), 0 below kWindowFloor of the largest IFFT(RW)
      QGPU_CUDA(cudaMemcpy(d_prod_.data(), d_wref_spec_.data(), nq_ * sizeof(float2), cudaMemcpyDeviceToDevice));
      QGPU_CUFFT(cufftExecC2R(c2r_one_.h, d_prod_.as<cufftComplex>(), d_wref_.as<cufftReal>()));
      std::vector<float> wref(n_);
      d_ref_.download(out.data(), n_ * sizeof(float));
      d_wref_.download(wref.data(), n_ * sizeof(float));
      const float top = *std::max_element(wref.begin(), wref.end());
      for (std::size_t s = 0; s < n_; ++s) out[s] = wref[s] > float(kWindowFloor) * top ? out[s] / wref[s] : 0.0f;
      return out;
    }
    scale_kernel<<<blocks_for(n_), kThreads>>>(d_ref_.as<float>(), n_,
                                               ref_wsum_ > 0 ? float(1.0 / (double(n_) * ref_wsum_)) : 0.0f);
    QGPU_CUDA_LAUNCHED("parallax scale_kernel");
    d_ref_.download(out.data(), n_ * sizeof(float));
    return out;
  }

  std::vector<Shift> correlate(const std::vector<Shift>& predicted, std::size_t w, std::vector<float>* windows) override {
    upload_shifts(predicted, d_pred_);
    const std::size_t side2 = (2 * w + 1) * (2 * w + 1);
    DeviceBuffer d_win(windows ? groups_ * side2 * sizeof(float) : sizeof(float));
    for (std::size_t g0 = 0; g0 < groups_; g0 += batch_) {
      const std::size_t count = std::min(batch_, groups_ - g0);
      cross_kernel<<<blocks_for(nq_ * count), kThreads>>>(d_spec_.as<float2>(), d_ref_spec_.as<float2>(),
                                                           d_ref_shift_.as<double2>(), d_weight_.as<float>(),
                                                           std::uint32_t(g0), std::uint32_t(nr_), std::uint32_t(nc_),
                                                           std::uint32_t(nch_), count, sb_, class_sums(),
                                                           d_prod_.as<float2>());
      QGPU_CUDA_LAUNCHED("parallax cross_kernel");
      QGPU_CUFFT(cufftExecC2R(count == batch_ ? c2r_.h : c2r_tail(count), d_prod_.as<cufftComplex>(),
                              d_cc_.as<cufftReal>()));
      const float* env = windowed_ ? d_env_.as<float>() : nullptr;
      peak_kernel<<<unsigned(count), kThreads>>>(d_cc_.as<float>(), env, std::uint32_t(nr_), std::uint32_t(nc_),
                                                 std::uint32_t(g0), d_pred_.as<double2>(), std::uint32_t(w),
                                                 d_shifts_.as<double2>());
      QGPU_CUDA_LAUNCHED("parallax peak_kernel");
      if (windows) {
        window_kernel<<<blocks_for(count * side2), kThreads>>>(d_cc_.as<float>(), env, std::uint32_t(nr_),
                                                             std::uint32_t(nc_), std::uint32_t(g0), count,
                                                             d_pred_.as<double2>(), std::uint32_t(w), d_win.as<float>());
        QGPU_CUDA_LAUNCHED("parallax window_kernel");
      }
    }
    if (windows) {
      windows->resize(groups_ * side2);
      d_win.download(windows->data(), groups_ * side2 * sizeof(float));
    }
    std::vector<double2> s(groups_);
    d_shifts_.download(s.data(), groups_ * sizeof(double2));
    std::vector<Shift> out(groups_);
    for (std::size_t g = 0; g < groups_; ++g) out[g] = {s[g].x, s[g].y};
    return out;
  }

  std::vector<float> upsampled_sum(const std::vector<Shift>& sh, std::size_t up) override {
    upload_shifts(sh, d_shifts_);
    const std::size_t nu = n_ * up * up;
    DeviceBuffer val(nu * sizeof(float)), wt(nu * sizeof(float)), total(sizeof(double));
    QGPU_CUDA(cudaMemset(val.data(), 0, val.bytes()));
    QGPU_CUDA(cudaMemset(wt.data(), 0, wt.bytes()));
    QGPU_CUDA(cudaMemset(total.data(), 0, sizeof(double)));
    splat_kernel<<<blocks_for(n_ * groups_), kThreads>>>(d_v_.as<float>(), d_shifts_.as<double2>(),
                                                         std::uint32_t(groups_), std::uint32_t(nr_),
                                                         std::uint32_t(nc_), std::uint32_t(up), val.as<float>(),
                                                         wt.as<float>());
    QGPU_CUDA_LAUNCHED("parallax splat_kernel");
    total_kernel<<<grid_blocks(nu, kThreads, 1024), kThreads>>>(wt.as<float>(), nu,
                                                                                     total.as<double>());
    QGPU_CUDA_LAUNCHED("parallax total_kernel");
    density_kernel<<<blocks_for(nu), kThreads>>>(val.as<float>(), wt.as<float>(), nu, total.as<double>(),
                                                 float(kWeightFloor));
    QGPU_CUDA_LAUNCHED("parallax density_kernel");
    std::vector<float> out(nu);
    val.download(out.data(), nu * sizeof(float));
    return out;
  }

  nlohmann::json describe() const override {
    return {{"fft", "cuFFT R2C/C2R complex64, half spectrum"},
            {"precision", "float32 (sums of counts exact in uint64 before the float cast)"},
            {"virtual_image_bytes", d_v_.bytes()},
            {"spectra_bytes", d_spec_.bytes()},
            {"batch", batch_}};
  }

 private:
  void gather(const Dataset& ds) {
    const std::size_t nscan = n_;
    if (const EncodedResident* e = ds.encoded()) {
      const std::size_t npix = plan_.pixels.size();
      DeviceBuffer px(std::max<std::size_t>(npix * nscan * dtype_size(ds.dtype()), 1));
      encoded::cuda::decode_pixels(e->layout(), e->device_tiles(), d_pixels_.as<std::uint32_t>(), npix, px.data());
      dispatch_count_dtype(ds.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const dim3 g(blocks_for(nscan), unsigned(std::min<std::size_t>(groups_, 65535)));
        detector::cuda::gather_groups_pixel_major_kernel<T><<<g, kThreads>>>(
            px.as<T>(), nscan, d_offsets_.as<std::uint32_t>(), 0u, std::uint32_t(groups_), 0u, std::uint32_t(npix),
            std::uint32_t(plan_.scan_cols), plan_.scan_cols, nscan, d_v_.as<float>());
      });
      QGPU_CUDA_LAUNCHED("parallax gather_pixel_major_kernel");
      QGPU_CUDA(cudaDeviceSynchronize());  // px is freed on return
      return;
    }
    const dim3 block(detector::cuda::kGatherTile, detector::cuda::kGatherTileRows),
        grid(unsigned((nscan + detector::cuda::kGatherTile - 1) / detector::cuda::kGatherTile),
             unsigned((groups_ + detector::cuda::kGatherTile - 1) / detector::cuda::kGatherTile));
    dispatch_stored_dtype(ds.dtype(), [&](auto tag) {
      using T = decltype(tag);
      detector::cuda::gather_groups_kernel<T><<<grid, block>>>(
          static_cast<const T*>(ds.device_buffer().data()), ds.shape().frame_pixels(), d_offsets_.as<std::uint32_t>(),
          d_pixels_.as<std::uint32_t>(), 0u, std::uint32_t(groups_), nscan, std::uint32_t(plan_.scan_cols),
          plan_.scan_cols, nscan, d_v_.as<float>());
    });
    QGPU_CUDA_LAUNCHED("parallax gather_kernel");
  }

  ClassSums class_sums() {
    if (!sb_.on) return ClassSums{};
    return {d_tm_.as<float2>(), d_tp_.as<float2>(), d_n_.as<float4>()};
  }

  void upload_shifts(const std::vector<Shift>& sh, DeviceBuffer& to) {
    std::vector<double2> s(groups_);
    for (std::size_t g = 0; g < groups_; ++g) s[g] = make_double2(sh[g].row, sh[g].col);
    to.upload(s.data(), groups_ * sizeof(double2));
  }

  void plan_many(CufftHandle& h, std::size_t count, cufftType type) {
    int n[2] = {int(nr_), int(nc_)};
    const bool r2c = type == CUFFT_R2C;
    QGPU_CUFFT(cufftPlanMany(&h.h, 2, n, nullptr, 1, int(r2c ? n_ : nq_), nullptr, 1, int(r2c ? nq_ : n_), type,
                             int(count)));
    h.made = true;
  }

  void make_plans() {
    plan_many(r2c_, batch_, CUFFT_R2C);
    plan_many(c2r_, batch_, CUFFT_C2R);
    plan_many(r2c_one_, 1, CUFFT_R2C);
    plan_many(c2r_one_, 1, CUFFT_C2R);
  }

  cufftHandle r2c_tail(std::size_t count) {
    if (!r2c_tail_.made) plan_many(r2c_tail_, count, CUFFT_R2C);
    return r2c_tail_.h;
  }
  cufftHandle c2r_tail(std::size_t count) {
    if (!c2r_tail_.made) plan_many(c2r_tail_, count, CUFFT_C2R);
    return c2r_tail_.h;
  }

  const Plan& plan_;
  std::size_t nr_, nc_, nch_, n_, nq_, groups_, batch_ = 1;
  double ref_wsum_ = 0;
  bool windowed_ = false;
  SidebandArgs sb_;
  DeviceBuffer d_sb_k_, d_tm_, d_tp_, d_n_;
  DeviceBuffer d_window_, d_wspec_, d_wref_spec_, d_env_spec_, d_env_, d_wref_;
  DeviceBuffer d_v_, d_spec_, d_shifts_, d_pred_, d_weight_, d_ref_shift_, d_offsets_, d_pixels_, d_ref_, d_ref_spec_, d_prod_, d_cc_;
  CufftHandle r2c_, c2r_, r2c_one_, c2r_one_, r2c_tail_, c2r_tail_;
};

}  // namespace

std::unique_ptr<Engine> make_cuda_engine(const Dataset& ds, const Plan& plan) {
  return std::make_unique<CudaEngine>(ds, plan);
}

}  // namespace qgpu::parallax::detail
