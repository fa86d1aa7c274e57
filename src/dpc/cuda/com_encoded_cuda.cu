// CoM on a GPU-resident encoded dataset, all on the device: the masked sums (encoded::cuda::masked_sums_async)
// into pooled buffers (no cudaMalloc per call), S from the stored device frame totals when there is no mask (else
// a third weighting of ones), then one kernel applies com_from_sums (the host reference's code and double
// arithmetic: identical float bits) and counts empty and possibly wrapped frames. One wait at the end; only the
// float maps and three flags come back (not the 3 x frames uint64 sums).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/host_bytes.hpp"
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

// The CoM of every frame from its sums S, Sr, Sc (device), downloaded with the kernel's flags (synchronised).
// Raises when a frame's weighted sums may have wrapped.
ComMaps finish_com(const Shape4D& sh, const unsigned long long* s, const unsigned long long* sr,
                   const unsigned long long* sc, float* rows, Flags* flags, Flags& f, cudaStream_t stream,
                   const char* what) {
  const std::size_t frames = sh.frames();
  const auto blocks = static_cast<unsigned>((frames + kThreads - 1) / kThreads);
  com_finish_kernel<<<blocks, kThreads, 0, stream>>>(s, sr, sc, frames, (double(sh.det_rows) - 1) / 2,
                                                     (double(sh.det_cols) - 1) / 2,
                                                     std::max(sh.det_rows, sh.det_cols) - 1, rows, rows + frames,
                                                     flags);
  QGPU_CUDA_LAUNCHED(what);
  ComMaps out;
  out.row = fresh_vector<float>(frames);  // huge pages: fewer faults on fresh memory
  out.col = fresh_vector<float>(frames);
  f = Flags{};
  QGPU_CUDA(cudaMemcpyAsync(&f, flags, sizeof(Flags), cudaMemcpyDeviceToHost, stream));
  QGPU_CUDA(cudaStreamSynchronize(stream));
  // The maps through the shared download (pinned bounce buffers on several threads): two pageable copies moved the
  // 2 x 16.8 MB of a 2048x2048 scan at a few GB/s (s14b: the basis CoM took 22 ms).
  download_bytes(out.row.data(), rows, frames * sizeof(float));
  download_bytes(out.col.data(), rows + frames, frames * sizeof(float));
  return out;
}

// S (the stored totals without a mask), Sr and Sc from the basis' prefix images, then the same finish kernel.
ComMaps com_from_basis(const Dataset& ds, const RadialBasis& basis, const RadialBasis::Ranges& shells, bool masked) {
  const Shape4D& sh = ds.shape();
  const std::size_t frames = sh.frames();
  if ((frames + kThreads - 1) / kThreads > std::size_t(INT_MAX)) throw InvalidArgument("CoM (basis, cuda): too many frames");
  LeasedBuffer d_sums(3 * frames * sizeof(std::uint64_t)), d_maps(2 * frames * sizeof(float)), d_flags(sizeof(Flags));
  const cudaStream_t stream = nullptr;
  QGPU_CUDA(cudaMemsetAsync(d_flags.data(), 0, sizeof(Flags), stream));
  auto* const sums = d_sums.as<std::uint64_t>();
  if (masked) basis.sums_device(shells, 0, sums, stream);
  basis.sums_device(shells, 1, sums + frames, stream);
  basis.sums_device(shells, 2, sums + 2 * frames, stream);
  const auto* const s = reinterpret_cast<const unsigned long long*>(masked ? sums : ds.encoded()->device_frame_totals());
  const auto* const sr = reinterpret_cast<const unsigned long long*>(sums + frames);
  const auto* const sc = sr + frames;
  auto* const flags = d_flags.as<Flags>();
  Flags f;
  ComMaps out = finish_com(sh, s, sr, sc, d_maps.as<float>(), flags, f, stream, "basis CoM finish");
  if (f.wrapped)
    throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
  out.empty_frames = f.empty;
  out.radial_basis = basis_json(basis, shells);
  return out;
}

}  // namespace

ComMaps com_encoded_cuda(const Dataset& ds, const std::uint8_t* mask) {
  const EncodedResident* e = ds.encoded();
  if (!e || e->backend() != Backend::cuda) throw Error("encoded CoM (cuda) on a dataset not encoded on the GPU");
  const Shape4D& sh = ds.shape();
  const std::size_t frames = sh.frames();
  if ((frames + kThreads - 1) / kThreads > std::size_t(INT_MAX))
    throw InvalidArgument("CoM (encoded, cuda): too many frames");
  if (const RadialBasis* basis = e->radial_basis()) {  // a union of its shells: S, Sr, Sc from its prefix images
    if (const auto shells = basis->match(mask)) return com_from_basis(ds, *basis, *shells, mask != nullptr);
  }
  // Pixel list then the weightings, [k][npix]: with a mask ones (S), det_row, det_col; without, det_row, det_col
  // (S is the stored frame totals).
  const ComPixelLists lists = com_pixel_lists(sh, mask);
  const std::size_t n = lists.pixels.size(), K = mask ? 3 : 2;
  // In the resident's decode order (dense pixels in the same warps: EncodedResident::decode_order).
  const std::vector<std::uint32_t> order = e->decode_order(lists.pixels);
  std::vector<std::uint32_t> host_in((K + 1) * n, 1u);
  const std::size_t at_rows = (K - 1) * n, at_cols = K * n;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t j = order[i];
    host_in[i] = lists.pixels[j];
    host_in[at_rows + i] = lists.rows[j];
    host_in[at_cols + i] = lists.cols[j];
  }

  LeasedBuffer d_in(host_in.size() * sizeof(std::uint32_t)), d_sums(K * frames * sizeof(std::uint64_t)),
      d_maps(2 * frames * sizeof(float)), d_flags(sizeof(Flags));
  const cudaStream_t stream = nullptr;  // the legacy default stream, as the other encoded queries
  QGPU_CUDA(cudaMemsetAsync(d_flags.data(), 0, sizeof(Flags), stream));
  QGPU_CUDA(cudaMemcpyAsync(d_in.data(), host_in.data(), d_in.bytes(), cudaMemcpyHostToDevice, stream));
  auto* const flags = d_flags.as<Flags>();
  const std::uint32_t* const d_pixels = d_in.as<std::uint32_t>();
  encoded::cuda::masked_sums_async(e->layout(), e->device_tiles(), d_pixels, d_pixels + n, n, static_cast<int>(K),
                                   d_sums.as<std::uint64_t>(), &flags->malformed, stream);
  const auto* const sums = d_sums.as<unsigned long long>();
  const auto* const s = mask ? sums : reinterpret_cast<const unsigned long long*>(e->device_frame_totals());
  const auto* const sr = sums + (K - 2) * frames;
  const auto* const sc = sr + frames;
  Flags f;
  ComMaps out = finish_com(sh, s, sr, sc, d_maps.as<float>(), flags, f, stream, "encoded CoM finish");
  if (f.malformed) throw FormatError("encoded resident: a malformed stream in masked_sum");
  if (f.wrapped)
    throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
  out.empty_frames = f.empty;
  return out;
}

}  // namespace qgpu::dpc::detail
