// The scan shape a reader hands the pipeline, or (for qgpu info and Python inspect) why there is none.
#include "core/error.hpp"
#include "io/hdf5/scan_shape.hpp"
#include "io/source/readers.hpp"

namespace qgpu::io {

void resolve_scan_shape_or_describe(FileInfo& fi, std::uint64_t frames, std::size_t det_rows, std::size_t det_cols,
                                    const ScanShapeHints& hints, const SourceOptions& o, const std::string& where) {
  fi.frames = frames;
  try {
    const ScanShape ss = resolve_scan_shape(frames, hints, where);
    fi.shape = {ss.rows, ss.cols, det_rows, det_cols};
    fi.scan_shape_source = ss.source;
  } catch (const FormatError& e) {
    const bool given = hints.given_rows || hints.given_cols;
    if (o.need == ScanShapeNeed::required || given) throw;
    fi.shape = {0, 0, det_rows, det_cols};
    fi.scan_shape_known = false;
    fi.scan_shape_needed = e.what();
    fi.scan_shape_source = "undetermined";
  }
}

}  // namespace qgpu::io
