#include "io/source/load_transposed.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/hdf5/codec/parallel_chunks.hpp"
#include "io/hdf5/load_provenance.hpp"
#include "io/source/nonfinite.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/hdf5/read/parallel_reader.hpp"
#include "io/hdf5/read/read_plan.hpp"
#include "io/source/frame_codec.hpp"

namespace qgpu::io {

TransposedGeometry transposed_geometry(const LoadPlan& p) {
  const FileInfo& fi = p.info;
  TransposedGeometry g;
  g.elem_size = dtype_size(fi.dtype);
  g.swap = fi.swap_bytes();
  g.scan_rows_fastest = fi.transposed.scan_rows_fastest;
  g.det_rows_fastest = fi.transposed.det_rows_fastest;
  g.scan_rows = fi.shape.scan_rows;
  g.scan_cols = fi.shape.scan_cols;
  g.det_rows = fi.shape.det_rows;
  g.det_cols = fi.shape.det_cols;
  g.sr0 = p.scan.row0, g.sc0 = p.scan.col0, g.srows = p.scan.rows, g.scols = p.scan.cols;
  g.dr0 = p.detector.row0, g.dc0 = p.detector.col0, g.drows = p.detector.rows, g.dcols = p.detector.cols;
  g.bin_scan = p.bin_scan;
  g.bin_det = p.bin_detector;
  g.out_scan_cols = p.out_shape.scan_cols;
  g.out_det_rows = p.out_shape.det_rows;
  g.out_det_cols = p.out_shape.det_cols;
  return g;
}

std::vector<TransposedSlab> transposed_slabs(const LoadPlan& p, std::uint64_t max_elems) {
  const TransposedGeometry g = transposed_geometry(p);
  const std::string what = dataset_where(p.info) + " slabs";
  const std::uint64_t plane = g.frames();  // the elements of one detector pixel
  max_elems = std::max<std::uint64_t>(max_elems, 1);
  std::vector<TransposedSlab> ranges;
  if (!g.det_rows_fastest) {  // whole detector rows lie contiguous; of a row only the region's columns are needed
    if (g.dcols == g.det_cols) {
      ranges.push_back({checked_mul(checked_mul(g.dr0, g.det_cols, what), plane, what),
                        checked_mul(checked_mul(g.drows, g.det_cols, what), plane, what)});
    } else {
      for (std::uint64_t dr = g.dr0; dr < g.dr0 + g.drows; ++dr)
        ranges.push_back({checked_mul(checked_add(checked_mul(dr, g.det_cols, what), g.dc0, what), plane, what),
                          checked_mul(g.dcols, plane, what)});
    }
  } else if (g.drows == g.det_rows) {  // whole detector columns lie contiguous; of a column only the region's rows
    ranges.push_back({checked_mul(checked_mul(g.dc0, g.det_rows, what), plane, what),
                      checked_mul(checked_mul(g.dcols, g.det_rows, what), plane, what)});
  } else {
    for (std::uint64_t dc = g.dc0; dc < g.dc0 + g.dcols; ++dc)
      ranges.push_back({checked_mul(checked_add(checked_mul(dc, g.det_rows, what), g.dr0, what), plane, what),
                        checked_mul(g.drows, plane, what)});
  }
  std::vector<TransposedSlab> slabs;
  for (const TransposedSlab& r : ranges)
    for (std::uint64_t o = 0; o < r.count; o += max_elems)
      slabs.push_back({r.first + o, std::min(max_elems, r.count - o)});
  return slabs;
}

TransposedRun plan_transposed(const LoadPlan& p) {
  TransposedRun r;
  r.where = dataset_where(p.info);
  if (p.binned() && !is_count_dtype(p.info.dtype))
    throw DTypeError(r.where + " holds " + dtype_name(p.info.dtype) +
                     (p.info.transposed.det_rows_fastest ? " in Fortran order" : " with the detector pixel slowest") +
                     ", whose binning sums unsigned counts only: load it unbinned, or write it frame after frame");
  r.g = transposed_geometry(p);
  r.slabs = transposed_slabs(p, std::max<std::uint64_t>(p.batch_bytes / r.g.elem_size, 1));
  for (const TransposedSlab& s : r.slabs) r.max_slab = std::max(r.max_slab, s.count);
  return r;
}

Provenance transposed_provenance(const LoadPlan& p, const TransposedRun& run, LoadTiming timing,
                                 const std::string& backend, const std::string& decoder) {
  timing.batches = run.slabs.size();
  timing.chunk_bytes = timing.bytes_read;
  timing.decoded_bytes = timing.bytes_read;
  Provenance pv = load_provenance(p, backend, decoder);
  pv.parameters["layout"] = p.info.transposed.det_rows_fastest ? "fortran_order" : "detector_pixel_slowest";
  pv.parameters["timing"] = timing.to_json();
  return pv;
}

std::vector<std::uint8_t> transposed_bad_mask(const LoadPlan& p) {
  if (!p.zero_bad_pixels) return {};
  std::vector<std::uint8_t> m(p.info.shape.frame_pixels(), 0);
  for (std::uint32_t px : p.bad_pixels) m.at(px) = 1;  // indices checked against the frame when the mask was taken
  return m;
}

namespace {

constexpr std::uint64_t kPiece = std::uint64_t(1) << 16;  // elements per task of the host scatter

template <class U>
void copy_piece(const std::uint8_t* slab, std::uint64_t first, std::uint64_t a, std::uint64_t b,
                const TransposedGeometry& g, U* out, const std::uint8_t* bad) {
  for (std::uint64_t i = a; i < b; ++i) {
    std::uint64_t o, px;
    if (!transposed_target(g, first + i, o, px)) continue;
    U v;
    std::memcpy(&v, slab + i * sizeof(U), sizeof(U));
    if (g.swap) v = byte_swapped(v);
    out[o] = bad && bad[px] ? U(0) : v;
  }
}

template <class T>
bool bin_piece(const std::uint8_t* slab, std::uint64_t first, std::uint64_t a, std::uint64_t b,
               const TransposedGeometry& g, std::uint32_t* out, const std::uint8_t* bad) {
  bool ok = true;
  for (std::uint64_t i = a; i < b; ++i) {
    std::uint64_t o, px;
    if (!transposed_target(g, first + i, o, px) || (bad && bad[px])) continue;
    T v;
    std::memcpy(&v, slab + i * sizeof(T), sizeof(T));
    if (g.swap) v = byte_swapped(v);
    if (v == 0) continue;
    const std::uint32_t old = std::atomic_ref<std::uint32_t>(out[o]).fetch_add(std::uint32_t(v),
                                                                               std::memory_order_relaxed);
    if (std::uint32_t(old + std::uint32_t(v)) < old) ok = false;
  }
  return ok;
}

}  // namespace

bool scatter_transposed_host(const std::uint8_t* slab, std::uint64_t first, std::uint64_t count,
                             const TransposedGeometry& g, DType dtype, bool binned, void* out, const std::uint8_t* bad,
                             unsigned threads) {
  const std::size_t pieces = std::size_t((count + kPiece - 1) / kPiece);
  std::atomic<bool> ok{true};
  auto each = [&](auto&& piece) {
    codec::parallel_indices(pieces, threads, [&](std::size_t k) {
      const std::uint64_t a = k * kPiece, b = std::min(count, a + kPiece);
      if (!piece(a, b)) ok = false;
    });
  };
  if (binned) {
    dispatch_count_dtype(dtype, [&](auto t) {
      using T = decltype(t);
      each([&](std::uint64_t a, std::uint64_t b) {
        return bin_piece<T>(slab, first, a, b, g, static_cast<std::uint32_t*>(out), bad);
      });
    });
    return ok;
  }
  auto copy = [&](auto u) {
    using U = decltype(u);
    each([&](std::uint64_t a, std::uint64_t b) {
      copy_piece<U>(slab, first, a, b, g, static_cast<U*>(out), bad);
      return true;
    });
  };
  switch (g.elem_size) {
    case 1: copy(std::uint8_t{}); break;
    case 2: copy(std::uint16_t{}); break;
    case 4: copy(std::uint32_t{}); break;
    case 8: copy(std::uint64_t{}); break;
    default: throw DTypeError("elements of " + std::to_string(g.elem_size) + " bytes: expected 1, 2, 4 or 8");
  }
  return true;
}

Dataset load_transposed_cpu(const LoadPlan& p, const std::function<void(double)>& progress) {
  const FileInfo& fi = p.info;
  LoadTiming timing;
  const double t0 = now_s();
  const TransposedRun run = plan_transposed(p);
  const auto& [where, g, slabs, max_slab] = run;
  const std::uint64_t es = g.elem_size;
  HostArray4D out;
  out.shape = p.out_shape;
  out.dtype = p.out_dtype;
  out.bytes.resize(p.out_shape.nbytes(dtype_size(p.out_dtype)));  // not zero-filled (core/host_bytes.hpp)
  if (p.binned()) std::memset(out.bytes.data(), 0, out.bytes.size());  // binned sums start at 0
  std::vector<std::uint8_t> buf(checked_mul(max_slab, es, where + " slab"));
  const std::vector<std::uint8_t> bad = transposed_bad_mask(p);
  ParallelReader reader({fi.path}, false, p.read_threads);
  timing.read_threads = reader.threads();
  timing.setup = now_s() - t0;
  if (progress) progress(0.0);
  for (std::size_t k = 0; k < slabs.size(); ++k) {
    const TransposedSlab& s = slabs[k];
    ReadBatch b;
    b.buffer_bytes = s.count * es;
    b.runs = {{0, checked_add(fi.transposed.offset, s.first * es, where), b.buffer_bytes, b.buffer_bytes, 0}};
    double t = now_s();
    reader.read(b, buf.data());
    timing.read += now_s() - t;
    timing.bytes_read += b.buffer_bytes;
    t = now_s();
    if (!scatter_transposed_host(buf.data(), s.first, s.count, g, fi.dtype, p.binned(), out.bytes.data(),
                                 bad.empty() ? nullptr : bad.data(), p.read_threads))
      throw FormatError("binned counts of " + where + " overflow uint32");
    timing.decode += now_s() - t;
    if (progress) progress(double(k + 1) / double(slabs.size()));
  }
  timing.total = now_s() - t0;
  Provenance pv = transposed_provenance(p, run, timing, "cpu", fi.transposed.det_rows_fastest ? "quantem-gpu host transpose (Fortran order)" : "quantem-gpu host transpose");
  nlohmann::json md = load_metadata(p);
  if (is_float_dtype(p.out_dtype))
    note_nonfinite(pv, md, zero_nonfinite_host(out.as<float>(), out.shape.elements()));
  return Dataset::from_host(std::move(out), std::move(md), std::move(pv));
}

}  // namespace qgpu::io
