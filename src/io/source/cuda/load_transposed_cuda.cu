// The GPU load of a transposed file (io/source/load_transposed.hpp): slabs read into pinned memory (two, so the
// read of slab k + 1 overlaps the copy and scatter of slab k), uploaded and scattered into the resident buffer.
#include <algorithm>
#include <memory>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/buffer_pool.hpp"
#include "device/cuda/device_buffer.hpp"
#include "io/hdf5/cuda/kept_batch_buffers.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "io/source/nonfinite.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_plan.hpp"
#include "io/source/cuda/scatter_transposed.hpp"
#include "io/source/load_transposed.hpp"

namespace qgpu::io {

namespace {

struct PinnedSlab {
  void* p = nullptr;
  explicit PinnedSlab(std::size_t bytes) { QGPU_CUDA(cudaMallocHost(&p, std::max<std::size_t>(bytes, 1))); }
  ~PinnedSlab() { cudaFreeHost(p); }
  PinnedSlab(const PinnedSlab&) = delete;
  PinnedSlab& operator=(const PinnedSlab&) = delete;
};

struct OwnedStream {
  cudaStream_t s = nullptr;
  cudaEvent_t done[2] = {nullptr, nullptr};
  OwnedStream() {
    QGPU_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (auto& e : done) QGPU_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
  }
  ~OwnedStream() {  // also on an error: nothing may still read the pinned slabs when they are freed
    cudaStreamSynchronize(s);
    for (auto e : done) cudaEventDestroy(e);
    cudaStreamDestroy(s);
  }
};

}  // namespace

Dataset load_transposed_cuda(const LoadPlan& p, const std::function<void(double)>& progress) {
  const FileInfo& fi = p.info;
  LoadTiming timing;
  const double t0 = now_s();
  const TransposedRun run = plan_transposed(p);
  const auto& [where, g, slabs, max_slab] = run;
  const std::uint64_t es = g.elem_size;
  const std::size_t slab_bytes = checked_mul(max_slab, es, where + " slab");
  const std::size_t out_bytes = p.out_shape.nbytes(dtype_size(p.out_dtype));
  std::shared_ptr<DeviceBuffer> result = take_kept_resident(out_bytes);
  if (!result) cuda::make_room(out_bytes);
  if (!result) result = resident_buffer(out_bytes);
  const std::vector<std::uint8_t> bad = transposed_bad_mask(p);
  DeviceBuffer d_bad(bad.size());
  if (!bad.empty()) d_bad.upload(bad.data(), bad.size());
  DeviceBuffer flags(sizeof(int));
  const int zero = 0;
  flags.upload(&zero, sizeof(zero));
  DeviceBuffer dev[2] = {DeviceBuffer(slab_bytes), DeviceBuffer(slabs.size() > 1 ? slab_bytes : 0)};
  PinnedSlab pinned0(slab_bytes), pinned1(slabs.size() > 1 ? slab_bytes : 0);
  void* const host[2] = {pinned0.p, pinned1.p};
  ParallelReader reader({fi.path}, false, p.read_threads);
  timing.read_threads = reader.threads();
  OwnedStream st;  // declared after the buffers it uses: synchronised before they go
  if (p.binned()) QGPU_CUDA(cudaMemsetAsync(result->data(), 0, out_bytes, st.s));  // sums start at 0
  bool busy[2] = {false, false};
  timing.setup = now_s() - t0;
  if (progress) progress(0.0);
  for (std::size_t k = 0; k < slabs.size(); ++k) {
    const TransposedSlab& s = slabs[k];
    const int b = int(k % 2);
    if (busy[b]) QGPU_CUDA(cudaEventSynchronize(st.done[b]));  // slab k - 2 is off this pinned buffer
    ReadBatch batch;
    batch.buffer_bytes = s.count * es;
    const std::uint64_t at = checked_add(fi.transposed.offset, s.first * es, where);
    batch.runs = {{0, at, batch.buffer_bytes, batch.buffer_bytes, 0}};
    const double t = now_s();
    reader.read(batch, static_cast<std::uint8_t*>(host[b]));
    timing.read += now_s() - t;
    timing.bytes_read += batch.buffer_bytes;
    QGPU_CUDA(cudaMemcpyAsync(dev[b].data(), host[b], batch.buffer_bytes, cudaMemcpyHostToDevice, st.s));
    cuda::scatter_transposed(dev[b].as<std::uint8_t>(), s.first, s.count, g, fi.dtype, p.binned(), result->data(),
                             bad.empty() ? nullptr : d_bad.as<std::uint8_t>(), flags.as<int>(), st.s);
    QGPU_CUDA(cudaEventRecord(st.done[b], st.s));
    busy[b] = true;
    if (progress) progress(double(k + 1) / double(slabs.size()));
  }
  const double tw = now_s();
  QGPU_CUDA(cudaStreamSynchronize(st.s));
  timing.wait = now_s() - tw;
  int overflow = 0;
  flags.download(&overflow, sizeof(overflow));
  if (overflow) throw FormatError("binned counts of " + where + " overflow uint32");
  timing.total = now_s() - t0;
  Provenance pv = transposed_provenance(p, run, timing, "cuda", fi.transposed.det_rows_fastest ? "quantem-gpu CUDA transpose (Fortran order)" : "quantem-gpu CUDA transpose");
  nlohmann::json md = load_metadata(p);
  if (is_float_dtype(p.out_dtype))
    note_nonfinite(pv, md, cuda::zero_nonfinite(result->as<float>(), p.out_shape.elements()));
  return Dataset::from_device(result, p.out_shape, p.out_dtype, std::move(md), std::move(pv));
}

}  // namespace qgpu::io
