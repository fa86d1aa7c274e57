#include "io/hdf5/write_dectris.hpp"

#include <algorithm>

#include "core/atomic_output.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "io/hdf5/codec/bitshuffle_format.hpp"
#include "io/hdf5/codec/byte_order.hpp"
#include "io/hdf5/h5_handle.hpp"

namespace qgpu::io {

namespace {

h5::Handle make_group(hid_t parent, const char* name) {
  h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  h5::Handle g(H5Gcreate2(parent, name, lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw IoError(std::string("cannot create the group ") + name);
  return g;
}

void write_double_attr(hid_t obj, const std::string& name, double v) {
  h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle a(H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid() || H5Awrite(a, H5T_NATIVE_DOUBLE, &v) < 0) throw IoError("cannot write the attribute " + name);
}

void write_string_dataset(hid_t parent, const char* name, const std::string& text) {
  h5::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, std::max<std::size_t>(1, text.size()));
  H5Tset_cset(type, H5T_CSET_UTF8);
  h5::Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle ds(H5Dcreate2(parent, name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  const std::string padded = text.empty() ? std::string(1, '\0') : text;
  if (!ds.valid() || H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, padded.data()) < 0)
    throw IoError(std::string("cannot write ") + name);
}

}  // namespace

hid_t dectris_file_type(DType t, bool be) {
  switch (t) {
    case DType::u8: return be ? H5T_STD_U8BE : H5T_STD_U8LE;
    case DType::u16: return be ? H5T_STD_U16BE : H5T_STD_U16LE;
    case DType::u32: return be ? H5T_STD_U32BE : H5T_STD_U32LE;
    case DType::i8: return be ? H5T_STD_I8BE : H5T_STD_I8LE;
    case DType::i16: return be ? H5T_STD_I16BE : H5T_STD_I16LE;
    case DType::i32: return be ? H5T_STD_I32BE : H5T_STD_I32LE;
    case DType::f32: return be ? H5T_IEEE_F32BE : H5T_IEEE_F32LE;
    case DType::f64: return be ? H5T_IEEE_F64BE : H5T_IEEE_F64LE;
    default: break;
  }
  throw InvalidArgument("a DECTRIS-style file holds uint8/16/32, int8/16/32 or float32/64 elements, not " +
                        dtype_name(t));
}

DectrisWriter::DectrisWriter() = default;

DectrisWriter::~DectrisWriter() {
  try {
    wait_pending();
  } catch (...) {
  }
  dataset_.reset();
  entry_.reset();
  file_.reset();
  // out_ (not committed) removes the temporary
}

const std::string& DectrisWriter::path() const {
  static const std::string none;
  return out_ ? out_->path() : none;
}

hid_t DectrisWriter::entry() const {
  if (!entry_.valid()) throw Error("DectrisWriter: not open");
  return entry_.get();
}

void DectrisWriter::open(const std::string& path, const DectrisLayout& l, const std::string& what) {
  if (out_) throw Error("DectrisWriter: already open (" + out_->path() + ")");
  const hid_t ftype = dectris_file_type(l.dtype, l.big_endian);
  const std::size_t esize = dtype_size(l.dtype);
  if (l.det_rows == 0 || l.det_cols == 0 || l.frames == 0)
    throw InvalidArgument("a DECTRIS-style file needs frames and a detector shape > 0 (got " +
                          std::to_string(l.frames) + " frames of " + std::to_string(l.det_rows) + " x " +
                          std::to_string(l.det_cols) + ")");
  if ((l.scan_rows == 0) != (l.scan_cols == 0))
    throw InvalidArgument("the scan shape is rows x cols, both > 0, or none");
  if (l.scan_rows && checked_mul<InvalidArgument>(l.scan_rows, l.scan_cols, "scan shape") != l.frames)
    throw InvalidArgument("scan shape " + std::to_string(l.scan_rows) + " x " + std::to_string(l.scan_cols) +
                          " does not hold the " + std::to_string(l.frames) + " frames");
  if (l.four_d && !l.scan_rows) throw InvalidArgument("a 4D dataset needs the scan shape");
  const std::uint64_t frame_elems = checked_mul<InvalidArgument>(l.det_rows, l.det_cols, "frame size");
  checked_mul<InvalidArgument>(checked_mul<InvalidArgument>(frame_elems, esize, "frame bytes"), l.frames,
                               "dataset bytes");
  params_ = l.bitshuffle;
  if (params_.elem_size == 0) params_.elem_size = esize;
  if (params_.elem_size != esize)
    throw InvalidArgument("bitshuffle element size " + std::to_string(params_.elem_size) + " is not the " +
                          std::to_string(esize) + " bytes of " + dtype_name(l.dtype));
  if (params_.block_elems == 0) params_.block_elems = codec::default_block_elems(esize);
  params_.big_endian = l.big_endian;
  if (l.compress) {
    try {
      codec::validate(params_);
    } catch (const FormatError& e) {
      throw InvalidArgument(e.what());
    }
    h5::ensure_bitshuffle_filter();  // its set_local fills in the stored cd_values
  }
  layout_ = l;
  layout_.calibration = nlohmann::json();  // written now, not kept
  layout_.provenance = nlohmann::json();
  layout_.bad_pixels.clear();

  auto out = std::make_unique<AtomicOutput>(path, what);
  h5::Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (l.fixed_array_index && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) < 0)
    throw IoError("cannot ask HDF5 for the 1.10 file format");
  h5::Handle file(H5Fcreate(out->temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  if (!file.valid()) throw IoError("cannot create '" + path + "'");
  h5::Handle entry = make_group(file, "/entry");
  h5::Handle data = make_group(entry, "data");
  const int rank = l.four_d ? 4 : 3;
  const std::vector<hsize_t> dims = l.four_d ? std::vector<hsize_t>{l.scan_rows, l.scan_cols, l.det_rows, l.det_cols}
                                             : std::vector<hsize_t>{l.frames, l.det_rows, l.det_cols};
  std::vector<hsize_t> chunk(rank, 1);
  chunk[rank - 2] = l.det_rows;
  chunk[rank - 1] = l.det_cols;
  h5::Handle space(H5Screate_simple(rank, dims.data(), nullptr), H5Sclose);
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (H5Pset_chunk(dcpl, rank, chunk.data()) < 0)
    throw InvalidArgument("HDF5 refuses a chunk of one " + std::to_string(l.det_rows) + " x " +
                          std::to_string(l.det_cols) + " frame (a chunk holds less than 4 GiB)");
  if (l.compress) {
    // The default block as 0, as DECTRIS and the plugin's own writers store it ({.., elem, 0, 2}).
    codec::BitshuffleParams stored = params_;
    if (stored.block_elems == codec::default_block_elems(esize)) stored.block_elems = 0;
    const std::vector<unsigned> cd = codec::filter_cd_values(stored);
    if (H5Pset_filter(dcpl, h5::kBitshuffleFilter, H5Z_FLAG_MANDATORY, cd.size(), cd.data()) < 0)
      throw IoError("cannot set the bitshuffle filter on '" + path + "'");
  }
  h5::Handle ds(H5Dcreate2(data, "data", ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw IoError("cannot create /entry/data/data in '" + path + "'");
  if (l.scan_rows) {
    const long long shape[2] = {(long long)l.scan_rows, (long long)l.scan_cols};
    hsize_t two = 2;
    h5::Handle sp(H5Screate_simple(1, &two, nullptr), H5Sclose);
    h5::Handle a(H5Acreate2(ds, "scan_shape", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!a.valid() || H5Awrite(a, H5T_NATIVE_LLONG, shape) < 0) throw IoError("cannot write scan_shape");
  }
  if (l.calibration.is_object() && !l.calibration.empty()) {
    h5::Handle cal = make_group(entry, "calibration");
    for (const auto& [key, v] : l.calibration.items())
      if (v.is_number()) write_double_attr(cal, key, v.get<double>());
  }
  if (l.has_pixel_mask) {
    h5::Handle spec = make_group(entry, "instrument/detector/detectorSpecific");
    std::vector<std::uint32_t> mask(frame_elems, 0);
    for (std::uint32_t i : l.bad_pixels) {
      if (i >= frame_elems) throw InvalidArgument("bad pixel " + std::to_string(i) + " outside the frame");
      mask[i] = 1;
    }
    const hsize_t md[2] = {l.det_rows, l.det_cols};
    h5::Handle msp(H5Screate_simple(2, md, nullptr), H5Sclose);
    h5::Handle mds(H5Dcreate2(spec, "pixel_mask", H5T_STD_U32LE, msp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    if (!mds.valid() || H5Dwrite(mds, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, mask.data()) < 0)
      throw IoError("cannot write the pixel mask");
  }
  if (!l.provenance.is_null()) write_string_dataset(entry, "provenance", l.provenance.dump());

  written_.assign(l.frames, false);
  written_count_ = 0;
  out_ = std::move(out);
  file_ = std::move(file);
  entry_ = std::move(entry);
  dataset_ = std::move(ds);
}

std::vector<unsigned> DectrisWriter::stored_cd_values() const {
  if (!dataset_.valid() || !layout_.compress) return {};
  h5::Handle dcpl(H5Dget_create_plist(dataset_), H5Pclose);
  unsigned flags = 0, cd[16] = {0};
  std::size_t n = 16;
  char name[64];
  if (H5Pget_filter_by_id2(dcpl, h5::kBitshuffleFilter, &flags, &n, cd, sizeof name, name, nullptr) < 0) return {};
  return std::vector<unsigned>(cd, cd + std::min<std::size_t>(n, 16));
}

std::uint64_t DectrisWriter::frames_written() {
  wait_pending();
  return written_count_;
}

void DectrisWriter::wait_pending() {
  if (pending_.valid()) pending_.get();  // rethrows the batch's error
}

void DectrisWriter::put_chunk(std::uint64_t f, const void* bytes, std::size_t n) {
  std::vector<hsize_t> offset(layout_.four_d ? 4 : 3, 0);
  if (layout_.four_d) {
    offset[0] = f / layout_.scan_cols;
    offset[1] = f % layout_.scan_cols;
  } else {
    offset[0] = f;
  }
  if (H5Dwrite_chunk(dataset_, H5P_DEFAULT, 0, offset.data(), n, bytes) < 0)
    throw IoError("cannot write frame " + std::to_string(f) + " to '" + out_->path() + "'");
  if (!written_[f]) {
    written_[f] = true;
    ++written_count_;
  }
}

void DectrisWriter::write_chunk(std::uint64_t frame, const std::uint8_t* chunk, std::size_t bytes) {
  if (!out_) throw Error("DectrisWriter: not open");
  wait_pending();
  if (frame >= layout_.frames)
    throw InvalidArgument("frame " + std::to_string(frame) + " is outside the " + std::to_string(layout_.frames) +
                          " frames of '" + out_->path() + "'");
  const std::uint64_t frame_bytes = std::uint64_t(layout_.det_rows) * layout_.det_cols * params_.elem_size;
  if (!layout_.compress) {
    if (bytes != frame_bytes)
      throw InvalidArgument("an uncompressed chunk holds the frame's " + std::to_string(frame_bytes) + " bytes, not " +
                            std::to_string(bytes));
  } else {
    if (!chunk || bytes < codec::kChunkHeaderBytes)
      throw InvalidArgument("chunk of frame " + std::to_string(frame) + " is " + std::to_string(bytes) +
                            " bytes, shorter than the 12-byte bitshuffle header");
    const std::uint64_t decoded = codec::read_be64(chunk);
    const std::uint32_t block = codec::read_be32(chunk + 8);
    if (decoded != frame_bytes)
      throw InvalidArgument("chunk of frame " + std::to_string(frame) + " decodes to " + std::to_string(decoded) +
                            " bytes (its header), not the frame's " + std::to_string(frame_bytes));
    if (block != params_.block_bytes())
      throw InvalidArgument("chunk of frame " + std::to_string(frame) + " has bitshuffle blocks of " +
                            std::to_string(block) + " bytes, the dataset's are " +
                            std::to_string(params_.block_bytes()));
  }
  put_chunk(frame, chunk, bytes);
}

void DectrisWriter::write_frames(std::uint64_t first, std::size_t n, const void* frames) {
  if (!out_) throw Error("DectrisWriter: not open");
  if (first > layout_.frames || n > layout_.frames - first)
    throw InvalidArgument("frames " + std::to_string(first) + " + " + std::to_string(n) + " exceed the " +
                          std::to_string(layout_.frames) + " frames of '" + out_->path() + "'");
  if (n == 0) return;
  const std::size_t frame_elems = layout_.det_rows * layout_.det_cols;
  const std::size_t frame_bytes = frame_elems * params_.elem_size;
  std::vector<std::vector<std::uint8_t>>& chunks = chunk_sets_[next_set_++ % 2];
  if (layout_.compress) {
    // The set being filled is not the one the pending write reads.
    codec::encode_chunks(params_, frame_elems, frames, n, chunks, layout_.threads);
  } else {
    chunks.resize(n);
    const auto* src = static_cast<const std::uint8_t*>(frames);
    for (std::size_t i = 0; i < n; ++i) {
      chunks[i].assign(src + i * frame_bytes, src + (i + 1) * frame_bytes);
      if (layout_.big_endian) codec::swap_element_bytes(chunks[i].data(), frame_elems, params_.elem_size);
    }
  }
  wait_pending();  // the previous batch is on disk (only one thread calls HDF5 at a time)
  pending_ = std::async(std::launch::async, [this, &chunks, first, n] {
    for (std::size_t i = 0; i < n; ++i) put_chunk(first + i, chunks[i].data(), chunks[i].size());
  });
}

void DectrisWriter::close() {
  if (!out_) throw Error("DectrisWriter: not open");
  wait_pending();
  dataset_.reset();
  entry_.reset();
  if (H5Fflush(file_, H5F_SCOPE_GLOBAL) < 0)
    throw IoError("cannot write '" + out_->path() + "' (HDF5 could not flush it)");
  file_.reset();
  out_->commit();
  out_.reset();
}

}  // namespace qgpu::io
