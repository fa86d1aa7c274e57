// CoM on a GPU-resident encoded dataset, all on the device: S, Sr, Sc from the radial basis' prefix images or the
// resident's moment sums (EncodedResident::moment_sums_device: the mask's streams, or the stored totals and moment
// totals minus the cheaper complement's) into pooled buffers (no cudaMalloc per call), then one kernel applies
// com_from_sums (the host reference's code and double arithmetic: identical float bits) and counts empty and
// possibly wrapped frames. One wait at the end; only the float maps and three flags come back (not the 3 x frames
// uint64 sums).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/host_bytes.hpp"
#include "core/result_memory.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "dpc/com_backend.hpp"
#include "dpc/com_math.hpp"
#include "resident/encoded/cuda/encoded_cuda.hpp"
#include "resident/encoded/encoded_resident.hpp"

namespace qgpu::dpc::detail {

namespace {

constexpr unsigned kThreads = 256;

// Flags: [0, 8) empty-frame count, [8, 12) a frame's sums may have wrapped, [12, 16) a malformed stream.
struct Flags {
  unsigned long long empty;
  int wrapped;
  int malformed;
};

__global__ void com_finish_kernel(const unsigned long long* s, const unsigned long long* sr,
                                  const unsigned long long* sc, std::size_t frames, double centre_row,
                                  double centre_col, std::uint64_t max_index, float* rows, float* cols,
                                  Flags* flags) {
  const std::size_t f = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  bool empty = false;
  if (f < frames) {
    const std::uint64_t total = s[f];
    if (com_sums_may_wrap(total, max_index)) atomicExch(&flags->wrapped, 1);
    empty = total == 0;
    com_from_sums(total, sr[f], sc[f], centre_row, centre_col, rows[f], cols[f]);
  }
  const unsigned n = __popc(__ballot_sync(0xffffffffu, empty));
  if ((threadIdx.x & 31u) == 0 && n) atomicAdd(&flags->empty, static_cast<unsigned long long>(n));
}

// The CoM of every frame from its sums S, Sr, Sc (device) into pooled memory (2 x frames floats), downloaded with
// the kernel's flags (synchronised); with keep, left on the GPU in *keep instead (the flags still come back).
// Raises when a frame's weighted sums may have wrapped.
ComMaps finish_com(const Shape4D& sh, std::size_t frames, const unsigned long long* s, const unsigned long long* sr,
                   const unsigned long long* sc, Flags* flags, Flags& f, cudaStream_t stream, const char* what,
                   DeviceMaps* keep) {
  // Pooled either way (no cudaMalloc per call); kept alive past this call only through keep.
  std::shared_ptr<DeviceBuffer> maps = pooled_buffer(2 * frames * sizeof(float));
  float* const rows = maps->as<float>();
  const auto blocks = static_cast<unsigned>((frames + kThreads - 1) / kThreads);
  com_finish_kernel<<<blocks, kThreads, 0, stream>>>(s, sr, sc, frames, (double(sh.det_rows) - 1) / 2,
                                                     (double(sh.det_cols) - 1) / 2,
                                                     std::max(sh.det_rows, sh.det_cols) - 1, rows, rows + frames,
                                                     flags);
  QGPU_CUDA_LAUNCHED(what);
  ComMaps out;
  f = Flags{};
  QGPU_CUDA(cudaMemcpyAsync(&f, flags, sizeof(Flags), cudaMemcpyDeviceToHost, stream));
  QGPU_CUDA(cudaStreamSynchronize(stream));
  if (keep) {  // left on the GPU, not downloaded (download_maps)
    *keep = DeviceMaps{maps, rows, rows + frames, frames};
    return out;
  }
  out.row = result_vector<float>(frames);  // recycled memory, or fresh with huge pages: fewer faults
  out.col = result_vector<float>(frames);
  // The maps through the shared download (pinned bounce buffers on several threads): two pageable copies moved the
  // 2 x 16.8 MB of a 2048x2048 scan at a few GB/s (s14b: the basis CoM took 22 ms).
  download_bytes(out.row.data(), rows, frames * sizeof(float));
  download_bytes(out.col.data(), rows + frames, frames * sizeof(float));
  return out;
}

// S (the stored totals without a mask at full resolution), Sr and Sc from the basis' prefix images (summed over
// b x b blocks of positions when scan-binned), then the same finish kernel.
ComMaps com_from_basis(const Dataset& ds, const RadialBasis& basis, const RadialBasis::Ranges& shells, bool masked,
                       std::size_t b, DeviceMaps* keep) {
  const Shape4D& sh = ds.shape();
  const std::size_t frames = (sh.scan_rows / b) * (sh.scan_cols / b);
  if ((frames + kThreads - 1) / kThreads > std::size_t(INT_MAX)) throw InvalidArgument("CoM (basis, cuda): too many frames");
  LeasedBuffer d_sums(3 * frames * sizeof(std::uint64_t)), d_flags(sizeof(Flags));
  const cudaStream_t stream = nullptr;
  QGPU_CUDA(cudaMemsetAsync(d_flags.data(), 0, sizeof(Flags), stream));
  auto* const sums = d_sums.as<std::uint64_t>();
  const bool own_s = masked || b > 1;  // (without a mask the shells hold every pixel: their S is the frame total)
  if (own_s) basis.sums_device(shells, 0, sums, stream, b);
  basis.sums_device(shells, 1, sums + frames, stream, b);
  basis.sums_device(shells, 2, sums + 2 * frames, stream, b);
  const auto* const s = reinterpret_cast<const unsigned long long*>(own_s ? sums : ds.encoded()->device_frame_totals());
  const auto* const sr = reinterpret_cast<const unsigned long long*>(sums + frames);
  const auto* const sc = sr + frames;
  auto* const flags = d_flags.as<Flags>();
  Flags f;
  ComMaps out = finish_com(sh, frames, s, sr, sc, flags, f, stream, "basis CoM finish", keep);
  if (f.wrapped)
    throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
  out.empty_frames = f.empty;
  out.radial_basis = basis_json(basis, shells);
  return out;
}

}  // namespace

ComMaps com_encoded_cuda(const Dataset& ds, const std::uint8_t* mask, DeviceMaps* keep) {
  const EncodedResident* e = ds.encoded();
  if (!e || e->backend() != Backend::cuda) throw Error("encoded CoM (cuda) on a dataset not encoded on the GPU");
  const Shape4D& sh = ds.shape();
  const std::size_t frames = sh.frames();
  if ((frames + kThreads - 1) / kThreads > std::size_t(INT_MAX))
    throw InvalidArgument("CoM (encoded, cuda): too many frames");
  if (const RadialBasis* basis = e->radial_basis()) {  // a union of its shells: S, Sr, Sc from its prefix images
    if (const auto shells = basis->match(mask)) return com_from_basis(ds, *basis, *shells, mask != nullptr, 1, keep);
  }
  // S, Sr, Sc: the mask's streams decoded, or the stored totals and moment totals minus the cheaper complement's
  // (EncodedResident::moment_sums_device).
  LeasedBuffer d_sums(3 * frames * sizeof(std::uint64_t)), d_flags(sizeof(Flags));
  const cudaStream_t stream = nullptr;  // the legacy default stream, as the other encoded queries
  QGPU_CUDA(cudaMemsetAsync(d_flags.data(), 0, sizeof(Flags), stream));
  auto* const flags = d_flags.as<Flags>();
  std::string used;
  e->moment_sums_device(mask, d_sums.as<std::uint64_t>(), &flags->malformed, stream, &used);
  const auto* const s = d_sums.as<unsigned long long>();
  const auto* const sr = s + frames;
  const auto* const sc = sr + frames;
  Flags f;
  ComMaps out = finish_com(sh, frames, s, sr, sc, flags, f, stream, "encoded CoM finish", keep);
  if (f.malformed) throw FormatError("encoded resident: a malformed stream in masked_sum");
  if (f.wrapped)
    throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
  out.empty_frames = f.empty;
  out.encoded_sums = used;
  return out;
}

std::optional<ComMaps> com_encoded_cuda_binned(const Dataset& ds, const std::uint8_t* mask, std::size_t b) {
  const EncodedResident* e = ds.encoded();
  if (!e || e->backend() != Backend::cuda) return std::nullopt;
  const Shape4D& sh = ds.shape();
  if (const RadialBasis* basis = e->radial_basis())
    if (const auto shells = basis->match(mask)) return com_from_basis(ds, *basis, *shells, mask != nullptr, b, nullptr);
  const auto copy = e->scan_binned(b);
  if (!copy || copy->backend() != Backend::cuda || sh.scan_rows / copy->shape().scan_rows != b) return std::nullopt;
  // The copy's frames are the b x b blocks: their CoM is the binned CoM.
  ComMaps out = com_encoded_cuda(Dataset::from_encoded(copy, {}, {}), mask);
  out.scan_binned_copy = b;
  return out;
}

}  // namespace qgpu::dpc::detail
