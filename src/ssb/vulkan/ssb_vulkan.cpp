// SSB on the vulkan-resident dataset (the CUDA engine's scheme, ssb/cuda/ssb_cuda.cu, in Vulkan compute):
//   1. ssb_gather.comp: the BF-disk pixels summed per K group, every frame of every segment -> a batch of
//      [group][scan_row][scan_col] complex64 fields (imaginary part 0) in the FFT buffer;
//   2. one batched VkFFT C2C over the scan (device/vulkan/vkfft_plans.hpp; every size, Bluestein included); the
//      spectra are copied into the resident G chunks (or, past the memory budget, regathered and transformed on
//      every evaluation);
//   3. ssb_sums.comp, one invocation per half-spectrum Q (j <= nc / 2: G of real data is Hermitian), the K loop split
//      into segments: num = sum_K G conj(Gamma), den = sum_K w |Gamma|^2, in float (as CUDA);
//   4. on the host in float64: the segment partials added in order, Psi for the weighting (ssb_weighting.hpp for
//      Wiener), the fit loss (Parseval, Hermitian weights 2 off the j = 0 column); for the object, -i Psi extended
//      to the full spectrum by Hermitian symmetry -> one VkFFT inverse C2C -> phi_lin (real part) -> phase and
//      amplitude in double (atan2, hypot), as the CUDA engine.
// Everything that does not depend on the aberrations is made once per engine (G, the K table, the partials).
// Memory: G needs groups * scan_rows * scan_cols * 8 bytes (C2C, full spectrum), in chunks of at most 256 MiB (one
// storage buffer each). The chunks that fit the budget (70% of the largest device-local heap, or
// QGPU_SSB_DEVICE_BUDGET_BYTES when lower) stay resident; the rest are regathered and transformed on every
// evaluation (slower, same result up to float summation order).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/stage_timing.hpp"
#include "device/vulkan/vk_context.hpp"
#include "device/vulkan/vk_resident.hpp"
#include "device/vulkan/vkfft_plans.hpp"
#include "ssb/ssb_backend.hpp"
#include "ssb/ssb_math.hpp"
#include "ssb/ssb_weighting.hpp"

namespace qgpu::vulkan::shaders {
extern const Spirv ssb_gather;
extern const Spirv ssb_sums;
}  // namespace qgpu::vulkan::shaders

namespace qgpu::ssb::detail {

namespace {

namespace vk = qgpu::vulkan;

constexpr std::uint64_t kGatherGroup = 128;  // local_size_x of ssb_gather.comp
constexpr std::uint64_t kSumGroup = 256;     // of ssb_sums.comp
constexpr std::size_t kChunkBytes = std::size_t(256) << 20;

struct GatherPush {
  std::uint32_t frame_pixels, frames, first_frame, kind, g0, count, n;
};

struct SumPush {
  std::uint32_t nr, nc, nch, count, k0, seg_len, blocks, segments, unit_gamma;
  float dqy, dqx, kmax2;
  float two_pi_over_lambda, lambda, c1, c3, a1, a1_cos, a1_sin, b2, b2_cos, b2_sin, a2, a2_cos, a2_sin;
};
static_assert(sizeof(SumPush) == 25 * 4);

// The largest device-local heap, bytes.
double device_heap_bytes(vk::Context& c) {
  VkPhysicalDeviceMemoryProperties mp{};
  c.fn().vkGetPhysicalDeviceMemoryProperties(c.physical(), &mp);
  VkDeviceSize best = 0;
  for (std::uint32_t h = 0; h < mp.memoryHeapCount; ++h)
    if (mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) best = std::max(best, mp.memoryHeaps[h].size);
  return double(best);
}

class VulkanEngine final : public Engine {
 public:
  VulkanEngine(const Dataset& ds, const Plan& plan)
      : ds_(ds), plan_(plan), nr_(plan.scan_rows), nc_(plan.scan_cols), nch_(plan.scan_cols / 2 + 1),
        n_(nr_ * nc_), nq_(nr_ * nch_), groups_(plan.groups()), c_(vk::Context::get()) {
    const vk::Resident& r = ds_.vulkan_resident();
    kind_ = vk::element_kind(r.dtype(), "SSB on vulkan");
    if (nr_ >= (1u << 16) || nc_ >= (1u << 16) || groups_ >= (1u << 31) || plan_.pixels.size() >= (1u << 31))
      throw InvalidArgument("ssb vulkan: scan or K set too large");
    const std::size_t gbytes = n_ * 8;  // one group's spectrum
    if (gbytes > c_.max_buffer_bytes())
      throw InvalidArgument("ssb vulkan: a " + std::to_string(nr_) + "x" + std::to_string(nc_) +
                            " scan spectrum exceeds one storage buffer (" + std::to_string(c_.max_buffer_bytes()) +
                            " bytes)");
    // Resident chunks: all of G when it fits the budget, else chunks of at most a quarter of the budget (the FFT
    // batch buffer is then the streamed chunks' workspace) and as many as fit beside that buffer.
    budget_ = 0.7 * device_heap_bytes(c_);
    if (const char* env = std::getenv("QGPU_SSB_DEVICE_BUDGET_BYTES")) budget_ = std::min(budget_, std::atof(env));
    const bool fits = double(groups_) * double(gbytes) <= budget_;
    const double chunk_limit = std::min(double(std::min(kChunkBytes, c_.max_buffer_bytes())),
                                        fits ? budget_ : std::max(0.0, budget_ / 4));
    batch_ = std::clamp<std::size_t>(std::size_t(chunk_limit / double(gbytes)), 1, groups_);
    const std::size_t chunks = (groups_ + batch_ - 1) / batch_;
    const double chunk_bytes = double(batch_ * gbytes);
    const double left = budget_ - (fits ? 0.0 : chunk_bytes);
    resident_chunks_ = fits ? chunks : std::min<std::size_t>(chunks, left > 0 ? std::size_t(left / chunk_bytes) : 0);

    // K table (ky, kx, w, 0) and the CSR pixel lists.
    std::vector<float> kt(groups_ * 4, 0.0f);
    for (std::size_t g = 0; g < groups_; ++g) {
      kt[4 * g] = float(plan_.ky[g]);
      kt[4 * g + 1] = float(plan_.kx[g]);
      kt[4 * g + 2] = float(plan_.weight[g]);
    }
    k_ = std::make_unique<vk::Buffer>(kt.size() * 4);
    k_->upload(kt.data(), kt.size() * 4);
    offsets_ = std::make_unique<vk::Buffer>(plan_.offsets.size() * 4);
    offsets_->upload(plan_.offsets.data(), plan_.offsets.size() * 4);
    pixels_ = std::make_unique<vk::Buffer>(plan_.pixels.size() * 4);
    pixels_->upload(plan_.pixels.data(), plan_.pixels.size() * 4);

    // Segments of the K loop: enough work groups to fill a GPU (~2048), at least 256 K per segment (as CUDA).
    blocks_ = (nq_ + kSumGroup - 1) / kSumGroup;
    segments_ = std::uint32_t(std::clamp<std::size_t>(2048 / std::max<std::size_t>(blocks_, 1), 1,
                                                      std::max<std::size_t>(1, groups_ / 256)));
    num_ = std::make_unique<vk::Buffer>(segments_ * nq_ * 8);
    den_ = std::make_unique<vk::Buffer>(segments_ * nq_ * 4);

    vk::Buffer dc(groups_ * 8);
    {
      vk::FftLease fft(nr_, nc_, batch_);
      for (std::size_t ch = 0; ch < chunks; ++ch) {
        const std::size_t g0 = ch * batch_, cnt = std::min(batch_, groups_ - g0);
        vk::Commands cmd;
        transform(cmd, fft, g0, cnt);
        if (ch < resident_chunks_) {
          g_.push_back(std::make_unique<vk::Buffer>(cnt * gbytes));
          cmd.copy(fft.buffer(), 0, *g_.back(), 0, cnt * gbytes);
        }
        for (std::size_t g = 0; g < cnt; ++g) cmd.copy(fft.buffer(), g * gbytes, dc, (g0 + g) * 8, 8);
        cmd.run();
      }
    }
    std::vector<float> dcv(groups_ * 2);
    dc.download(dcv.data(), dcv.size() * 4);
    double s = 0;
    for (std::size_t g = 0; g < groups_; ++g) s += double(dcv[2 * g]);
    i0_ = s / (double(n_) * plan_.total_weight());
    if (!(i0_ > 0)) throw InvalidArgument("ssb: the BF disk holds no counts");
  }

  ObjectImages reconstruct(const Aberrations& ab, Weighting w, std::size_t scan_bin) override {
    if (scan_bin != 1)
      throw BackendUnavailable("ssb: a scan-binned reconstruction (scan_bin " + std::to_string(scan_bin) +
                               ") is not built on the vulkan backend; ask for scan_bin 1, or load with cuda or cpu");
    std::vector<std::complex<double>> num;
    std::vector<double> den;
    {
      const timing::Stage stage("compute");
      sums(ab, w == Weighting::phase, num, den);
    }
    const timing::Stage host("host");  // Psi on the half spectrum, then its Hermitian extension
    const double i0n = i0_ * double(n_), scale = 1.0 / i0n;
    std::vector<double> f(nq_);
    if (w == Weighting::wiener) {
      if (rings_.empty()) rings_ = wiener_rings(plan_, true, ring_count_);
      std::vector<double> mult(nq_);
      for (std::size_t q = 0; q < nq_; ++q) mult[q] = q % nch_ == 0 ? 1.0 : 2.0;
      const std::vector<double> power = wiener_ring_power(rings_, ring_count_, num.data(), den.data(), mult.data(), nq_, i0n);
      for (std::size_t q = 0; q < nq_; ++q) {
        const double sr = power[rings_[q]];
        f[q] = (sr > 0 && den[q] > 0) ? 1.0 / (i0n * (den[q] + 1.0 / (i0n * sr))) : 0.0;
      }
    } else if (w == Weighting::phase) {
      std::fill(f.begin(), f.end(), scale / plan_.total_weight());
    } else {
      const double floor = weight_floor(plan_);
      for (std::size_t q = 0; q < nq_; ++q) f[q] = scale / std::max(den[q], floor);
    }
    // spec = -i Psi over the full spectrum: spec(i, j) for j <= nc / 2 from the sums, conj(spec(-i, -j)) beyond.
    std::vector<float> spec(2 * n_);
    for (std::size_t i = 0; i < nr_; ++i)
      for (std::size_t j = 0; j < nc_; ++j) {
        std::complex<double> v;
        if (j < nch_) {
          const std::size_t q = i * nch_ + j;
          v = std::complex<double>(num[q].imag(), -num[q].real()) * f[q];  // -i (a + ib) = b - ia
        } else {
          const std::size_t q = ((nr_ - i) % nr_) * nch_ + (nc_ - j);
          v = std::conj(std::complex<double>(num[q].imag(), -num[q].real()) * f[q]);
        }
        spec[2 * (i * nc_ + j)] = float(v.real());
        spec[2 * (i * nc_ + j) + 1] = float(v.imag());
      }
    std::vector<float> phi(2 * n_);
    {
      vk::FftLease fft(nr_, nc_);
      {
        const timing::Stage stage("transfer");
        fft.buffer().upload(spec.data(), n_ * 8);
      }
      {
        const timing::Stage stage("compute");
        vk::Commands cmd;
        fft.inverse(cmd);  // unnormalised: sum_Q spec e^{+2 pi i Q.R}
        cmd.run();
      }
      const timing::Stage stage("transfer");
      fft.buffer().download(phi.data(), n_ * 8);
    }
    ObjectImages out;  // object = 1 + i phi_lin: phase = atan2(phi, 1), amplitude = hypot(1, phi)
    out.phase.resize(n_);
    out.amplitude.resize(n_);
    for (std::size_t s = 0; s < n_; ++s) {
      const double v = double(phi[2 * s]);
      out.phase[s] = float(std::atan2(v, 1.0));
      out.amplitude[s] = float(std::hypot(1.0, v));
    }
    return out;
  }

  double loss(const Aberrations& ab) override {
    std::vector<std::complex<double>> num;
    std::vector<double> den;
    sums(ab, false, num, den);
    double var = 0;
    for (std::size_t q = 0; q < nq_; ++q)
      if (den[q] > 0) var += (q % nch_ == 0 ? 1.0 : 2.0) * std::norm(num[q]) / den[q];
    const double in = i0_ * double(n_);
    return -var / (in * in);
  }

  nlohmann::json describe() const override {
    const std::size_t resident = std::min(groups_, resident_chunks_ * batch_);
    return {{"fft", "VkFFT C2C complex64 batched over K (full spectrum); sums over the half spectrum; C2C inverse "
                    "for the object"},
            {"precision", "float32 (G, Gamma, the K sums); segment totals, Psi and the loss in float64 on the host"},
            {"g_cube_bytes", groups_ * n_ * 8},
            {"groups", groups_},
            {"resident_groups", resident},
            {"streamed_groups", groups_ - resident},
            {"fft_batch", batch_},
            {"k_segments", segments_},
            {"device_budget_bytes", budget_}};
  }

 private:
  // Records the gather of groups [g0, g0 + cnt) into the FFT buffer (one dispatch per dataset segment) and the
  // batched forward transform.
  void transform(vk::Commands& cmd, vk::FftLease& fft, std::size_t g0, std::size_t cnt) {
    const vk::Resident& r = ds_.vulkan_resident();
    const vk::Pipeline& p = c_.pipeline(vk::shaders::ssb_gather, 4, sizeof(GatherPush));
    for (const auto& s : r.segments()) {
      const GatherPush push{std::uint32_t(r.shape().frame_pixels()), std::uint32_t(s.frames),
                            std::uint32_t(s.first_frame), kind_, std::uint32_t(g0), std::uint32_t(cnt),
                            std::uint32_t(n_)};
      cmd.dispatch(p, {{s.buffer.get()}, {offsets_.get()}, {pixels_.get()}, {&fft.buffer()}}, &push, sizeof push,
                   (cnt * s.frames + kGatherGroup - 1) / kGatherGroup);
    }
    fft.forward(cmd);  // exp(-2 pi i Q.R), as FFTW's
  }

  void pass(vk::Commands& cmd, const vk::Buffer& g, std::size_t k0, std::size_t count, SumPush push) {
    push.count = std::uint32_t(count);
    push.k0 = std::uint32_t(k0);
    push.seg_len = std::uint32_t((count + segments_ - 1) / segments_);
    cmd.dispatch(c_.pipeline(vk::shaders::ssb_sums, 4, sizeof(SumPush)),
                 {{&g, 0, count * n_ * 8}, {k_.get()}, {num_.get()}, {den_.get()}}, &push, sizeof push,
                 std::uint64_t(blocks_) * segments_);
  }

  // num, den over the half spectrum for the given aberrations (segment partials added in order, double).
  void sums(const Aberrations& ab, bool unit_gamma, std::vector<std::complex<double>>& num, std::vector<double>& den) {
    const ChiCoeffs<float> c = chi_coeffs<float>(ab, plan_.lambda);
    SumPush push{std::uint32_t(nr_), std::uint32_t(nc_), std::uint32_t(nch_), 0, 0, 0, std::uint32_t(blocks_),
                 segments_, unit_gamma ? 1u : 0u, float(1.0 / (double(nr_) * plan_.step)),
                 float(1.0 / (double(nc_) * plan_.step)), float(plan_.kmax2), c.two_pi_over_lambda, c.lambda, c.c1,
                 c.c3, c.a1, c.a1_cos, c.a1_sin, c.b2, c.b2_cos, c.b2_sin, c.a2, c.a2_cos, c.a2_sin};
    {
      vk::Commands cmd;
      cmd.fill_zero(*num_);
      cmd.fill_zero(*den_);
      for (std::size_t ch = 0; ch < g_.size(); ++ch) {
        const std::size_t g0 = ch * batch_;
        pass(cmd, *g_[ch], g0, std::min(batch_, groups_ - g0), push);
      }
      std::unique_ptr<vk::FftLease> fft;
      for (std::size_t g0 = g_.size() * batch_; g0 < groups_; g0 += batch_) {  // streamed: regather, transform
        if (!fft) fft = std::make_unique<vk::FftLease>(nr_, nc_, batch_);
        const std::size_t cnt = std::min(batch_, groups_ - g0);
        transform(cmd, *fft, g0, cnt);
        pass(cmd, fft->buffer(), g0, cnt, push);
      }
      cmd.run();
    }
    std::vector<float> nf(segments_ * nq_ * 2), df(segments_ * nq_);
    {
      const timing::Stage stage("transfer");
      num_->download(nf.data(), nf.size() * 4);
      den_->download(df.data(), df.size() * 4);
    }
    num.assign(nq_, 0.0);
    den.assign(nq_, 0.0);
    for (std::uint32_t s = 0; s < segments_; ++s)
      for (std::size_t q = 0; q < nq_; ++q) {
        const std::size_t o = s * nq_ + q;
        num[q] += std::complex<double>(nf[2 * o], nf[2 * o + 1]);
        den[q] += double(df[o]);
      }
  }

  Dataset ds_;
  Plan plan_;
  std::size_t nr_, nc_, nch_, n_, nq_, groups_;
  vk::Context& c_;
  std::uint32_t kind_ = 0;
  std::size_t batch_ = 1, blocks_ = 1, resident_chunks_ = 0;
  std::uint32_t segments_ = 1;
  double budget_ = 0;
  std::unique_ptr<vk::Buffer> k_, offsets_, pixels_, num_, den_;
  std::vector<std::unique_ptr<vk::Buffer>> g_;  // resident chunks of batch_ groups (the last may hold fewer)
  std::vector<std::int32_t> rings_;              // Wiener: the ring of each half-spectrum Q, made at first use
  std::size_t ring_count_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_vulkan_engine(const Dataset& ds, const Plan& plan) {
  return std::make_unique<VulkanEngine>(ds, plan);
}

}  // namespace qgpu::ssb::detail
