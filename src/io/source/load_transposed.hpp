#pragma once
// Loads of transposed files (io/source/transposed_layout.hpp: a Fortran-order .npy), where every frame is scattered
// over the whole file: contiguous slabs of the file (the pixel planes of the detector region, at most batch_bytes
// each) are read and scattered into the resident [scan_r][scan_c][det_r][det_c] buffer, the scan and detector
// regions, exact binning (uint32 sums) and the pixel mask (on the full stored frame) applied in the scatter.
// Dense only: encoded is made from the dense result (Dataset::to_encoded). Extra memory: one slab on the host (cpu),
// two pinned slabs and two device slabs (cuda), and a byte per detector pixel for the mask.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/hdf5/load.hpp"
#include "io/hdf5/load_timing.hpp"
#include "io/source/transposed_layout.hpp"

namespace qgpu::io {

TransposedGeometry transposed_geometry(const LoadPlan& plan);

// A contiguous range of stored elements.
struct TransposedSlab {
  std::uint64_t first = 0, count = 0;
};
// The element ranges the load needs (the pixel planes of the detector region), cut to at most max_elems each.
std::vector<TransposedSlab> transposed_slabs(const LoadPlan& plan, std::uint64_t max_elems);

// What both loaders start from: the geometry, the slabs (at most batch_bytes each) and the largest one's elements.
// DTypeError for binned data other than unsigned counts.
struct TransposedRun {
  std::string where;
  TransposedGeometry g;
  std::vector<TransposedSlab> slabs;
  std::uint64_t max_slab = 0;
};
TransposedRun plan_transposed(const LoadPlan& plan);
// The provenance of a finished load: `timing` completed from the run's slabs.
Provenance transposed_provenance(const LoadPlan& plan, const TransposedRun& run, LoadTiming timing,
                                 const std::string& backend, const std::string& decoder);

// One byte per stored detector pixel, 1 where the plan zeroes the pixel (LoadPlan::bad_pixels); empty when none.
std::vector<std::uint8_t> transposed_bad_mask(const LoadPlan& plan);

// Host scatter of the stored elements [first, first + count) held (as stored) in `slab` into `out` on `threads`
// threads. Unbinned: out holds elements of g.elem_size bytes (any dtype of that size: bytes are copied, swapped
// when g.swap), every element of the regions written, a bad pixel written 0. Binned: `dtype` (a count dtype) is
// read and added to the uint32 sums in out (which start at 0), bad pixels skipped; returns false when a sum
// overflows uint32.
bool scatter_transposed_host(const std::uint8_t* slab, std::uint64_t first, std::uint64_t count,
                             const TransposedGeometry& g, DType dtype, bool binned, void* out, const std::uint8_t* bad,
                             unsigned threads);

Dataset load_transposed_cpu(const LoadPlan& plan, const std::function<void(double)>& progress);
Dataset load_transposed_cuda(const LoadPlan& plan, const std::function<void(double)>& progress);

}  // namespace qgpu::io
