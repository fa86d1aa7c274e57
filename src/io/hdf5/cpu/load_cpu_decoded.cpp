#include "io/hdf5/cpu/load_cpu_decoded.hpp"

#include <atomic>
#include <cstring>

#include "core/error.hpp"
#include "io/hdf5/binning.hpp"
#include "io/hdf5/codec/bitshuffle_decode_host.hpp"
#include "io/hdf5/codec/parallel_chunks.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "io/source/nonfinite.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/hdf5/pixel_mask.hpp"
#include "io/hdf5/read/chunk_sources.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_batches.hpp"
#include "io/hdf5/read/read_plan.hpp"
#include "io/source/cpu/decode_records_host.hpp"

namespace qgpu::io {

namespace {


}  // namespace

Dataset load_cpu_decoded(const LoadPlan& p, const std::function<void(double)>& progress) {
  const FileInfo& fi = p.info;
  const std::string where = dataset_where(fi);
  require_plain_bits(fi, "our decoder");
  const std::string decoder = host_decoder_name(fi);  // (checks the codec's parameters before anything is read)

  LoadTiming timing;
  const ReadPlan rp = plan_reads(p, false, timing);
  const ChunkSources& src = rp.src;

  const double t_setup = now_s();
  auto enc = rp.encoded ? std::make_shared<EncodedResident>(p.out_shape, p.out_dtype, Backend::cpu) : nullptr;
  if (enc) enc->request_radial_basis(p.radial_basis);
  if (enc) enc->request_scan_binned(p.scan_binned);
  HostArray4D out;  // dense: the output; encoded: the batch's output rows (none for passthrough)
  out.shape = p.out_shape;
  out.dtype = p.out_dtype;
  out.bytes.resize(!rp.encoded       ? out.shape.elements() * dtype_size(out.dtype)
                   : rp.passthrough ? 0
                                    : rp.max_out_rows * rp.out_row_bytes);
  // Read buffer aligned for O_DIRECT; staging for crop/binning.
  std::vector<std::uint8_t> read_storage(rp.max_buffer + ParallelReader::kDirectAlign);
  std::uint8_t* read_buf = reinterpret_cast<std::uint8_t*>(
      (reinterpret_cast<std::uintptr_t>(read_storage.data()) + ParallelReader::kDirectAlign - 1) /
      ParallelReader::kDirectAlign * ParallelReader::kDirectAlign);
  std::vector<std::uint8_t> staging(rp.direct ? 0 : rp.max_chunks * fi.frame_bytes());
  timing.setup = now_s() - t_setup;
  std::vector<std::uint64_t> sizes(rp.max_chunks);
  std::vector<void*> dest(rp.max_chunks);

  if (progress) progress(0.0);  // the bar shows from the start, so a later message starts a new line
  for (const ReadBatch& b : rp.batches) {
    double t0 = now_s();
    rp.reader->read(b, read_buf);
    timing.read += now_s() - t0;
    t0 = now_s();
    for (std::size_t i = 0; i < b.chunks; ++i) {
      sizes[i] = src.chunks[b.first_chunk + i].size;
      dest[i] = rp.direct ? out.bytes.data() + (b.first_chunk + i) * fi.frame_bytes()
                          : staging.data() + i * fi.frame_bytes();
    }
    const codec::ChunkBatch cb{read_buf, b.buffer_bytes, b.chunk_dst.data(), sizes.data(), dest.data(), b.chunks};
    if (auto fail = decode_records_host(fi, cb, p.read_threads))
      rp.throw_decode_error(p, b.first_chunk + fail->chunk, fail->reason);
    if (p.zero_bad_pixels)  // on full stored frames, before crop and binning
      apply_pixel_mask_cpu(rp.direct ? dest[0] : staging.data(), fi.dtype, b.chunks, fi.shape.frame_pixels(),
                           p.bad_pixels.data(), p.bad_pixels.size());
    if (!rp.direct && !rp.passthrough) {
      std::atomic<bool> overflow{false};
      codec::parallel_indices(b.out_rows, p.read_threads, [&](std::size_t r) {
        std::uint8_t* dst = out.bytes.data() + ((rp.encoded ? 0 : b.out_row0) + r) * rp.out_row_bytes;
        const std::uint8_t* rows_in = staging.data() + r * rp.frames_per_out_row * fi.frame_bytes();
        try {
          dispatch_stored_dtype(fi.dtype, [&](auto t) {
            using T = decltype(t);
            const T* in = reinterpret_cast<const T*>(rows_in);
            if (p.binned())
              bin_scan_row<T, binned_t<T>>(in, p.scan.cols, fi.shape.det_rows, fi.shape.det_cols, p.detector.row0,
                                             p.detector.col0, p.out_shape.scan_cols, p.out_shape.det_rows,
                                             p.out_shape.det_cols, p.bin_scan, p.bin_detector,
                                             reinterpret_cast<binned_t<T>*>(dst));
            else
              bin_scan_row<T, T>(in, p.scan.cols, fi.shape.det_rows, fi.shape.det_cols, p.detector.row0,
                                 p.detector.col0, p.out_shape.scan_cols, p.out_shape.det_rows, p.out_shape.det_cols,
                                 1, 1, reinterpret_cast<T*>(dst));
          });
        } catch (const FormatError&) {
          overflow = true;
        }
      });
      if (overflow)
        throw FormatError("binned values of " + where + " overflow " + dtype_name(p.out_dtype));
    }
    if (rp.encoded)
      enc->append(rp.passthrough ? staging.data() : out.bytes.data(), b.out_rows * p.out_shape.scan_cols);
    timing.decode += now_s() - t0;
    if (progress) progress(double(b.out_row0 + b.out_rows) / double(p.out_shape.scan_rows));
  }
  Provenance pv = rp.provenance(p, timing, "cpu", decoder);
  if (rp.encoded) return encoded_dataset(p, std::move(enc), std::move(pv));
  nlohmann::json md = load_metadata(p);
  if (is_float_dtype(p.out_dtype))
    note_nonfinite(pv, md, zero_nonfinite_host(out.as<float>(), out.shape.elements()));
  return Dataset::from_host(std::move(out), std::move(md), std::move(pv));
}

}  // namespace qgpu::io
