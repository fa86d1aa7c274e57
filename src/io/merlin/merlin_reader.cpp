#include "io/merlin/merlin_reader.hpp"

#include <cstring>

#include "core/error.hpp"
#include "io/merlin/acquisition.hpp"

namespace qgpu::io::merlin {

bool is_merlin_head(const std::uint8_t* h, std::size_t n) {
  return n >= 4 && (std::memcmp(h, "MQ1,", 4) == 0 || std::memcmp(h, "HDR,", 4) == 0);
}

FileInfo inspect_merlin(const std::string& path, const SourceOptions& o) {
  MerlinOptions mo;
  mo.scan_rows = o.scan_rows;
  mo.scan_cols = o.scan_cols;
  mo.single_file = o.single_file;
  // The first and last header of each file are checked here (a file is whole frames of one size); reading every
  // header would cost a pread per frame before the load.
  mo.every_header = false;
  const MerlinAcquisition acq = scan_merlin(path, mo);
  FileInfo fi;
  fi.path = path;
  fi.source_kind = "Merlin " + std::string(acq.format.raw ? "raw" : "binary") + " " +
                   std::to_string(acq.format.counter_depth) + "-bit, " + layout_name(acq.format.layout) + ", " +
                   std::to_string(acq.files.size()) + " .mib file" + (acq.files.size() == 1 ? "" : "s");
  fi.dtype = acq.format.out_dtype;
  // Binary pixels are stored big-endian (raw ones as bit and byte groups): the merlin codec decodes either to the
  // host's order itself.
  fi.byte_order = !acq.format.raw && fi.dtype != DType::u8 ? "big" : "little";
  fi.precision = 8 * dtype_size(fi.dtype);
  fi.codec.kind = FrameCodecKind::merlin;
  fi.codec.merlin = acq.format;
  fi.codec.merlin.flip_rows = o.flip_rows;
  const std::size_t frames = acq.frames.size();
  fi.frames = frames;
  fi.shape = {acq.scan_rows, acq.scan_cols, acq.format.rows, acq.format.cols};
  fi.shape.nbytes(dtype_size(fi.dtype));
  fi.scan_shape_source = scan_shape_from_name(acq.scan_from);
  if (!acq.has_scan_shape()) {
    if (o.need == ScanShapeNeed::required) acq.require_scan_shape();  // the error asking for one
    fi.scan_shape_known = false;
    try {
      acq.require_scan_shape();
    } catch (const Error& e) {
      fi.scan_shape_needed = e.what();
    }
  }
  fi.dims = {frames, acq.format.rows, acq.format.cols};
  fi.records.files = acq.files;
  // Runs of frames that follow each other in one file, frame_bytes apart.
  for (std::size_t k = 0; k < frames; ++k) {
    const MerlinFrame& f = acq.frames[k];
    RecordRun* last = fi.records.runs.empty() ? nullptr : &fi.records.runs.back();
    if (last && last->file == f.file && f.offset == last->offset + last->frames * last->stride) {
      ++last->frames;
      continue;
    }
    fi.records.runs.push_back({f.file, k, 1, f.offset, acq.frame_bytes, acq.format.payload_bytes});
  }
  fi.one_frame_per_chunk = true;
  fi.chunks_expected = fi.chunks_written = frames;
  fi.ready = true;
  fi.warnings = acq.warnings;
  fi.metadata = acq.metadata;
  fi.metadata["flip_rows"] = o.flip_rows;
  return fi;
}

}  // namespace qgpu::io::merlin
