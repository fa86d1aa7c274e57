// Byte order and bits of the stored datatype (issue 25, points 3 and 4): big-endian uint16/uint32 counts load
// exactly on every path (our decoder on all cores, the HDF5 filter pipeline, the GPU decoder; dense, encoded,
// regions, binned), and a datatype whose count is not every bit of the element (precision / bit offset) is refused
// by our decoders with the dataset, precision and offset named, and read through HDF5's conversion otherwise.
// The files are written through the HDF5 library and the real bitshuffle plugin (H5Dwrite converts the counts to
// the file's datatype, the plugin shuffles them as stored): a writer independent of our encoder.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "acquisition_files.hpp"
#include "core/error.hpp"
#include "io/hdf5/bitshuffle_plugin.hpp"
#include "io/hdf5/load.hpp"
#include "load_reference.hpp"
#include "support/cuda_required.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
using qgpu::test::expect_error;

namespace {

sample::SampleSpec spec(DType t, std::size_t det_rows = 20, std::size_t det_cols = 24) {
  sample::SampleSpec s;
  s.scan_rows = 6;
  s.scan_cols = 8;
  s.det_rows = det_rows;
  s.det_cols = det_cols;
  s.dtype = t;
  return s;
}

hid_t native_type(DType t) {
  return t == DType::u8 ? H5T_NATIVE_UINT8 : t == DType::u16 ? H5T_NATIVE_UINT16 : H5T_NATIVE_UINT32;
}

// The standard file type of t in either byte order (a copy: the caller closes it).
hid_t file_type(DType t, bool big_endian) {
  if (big_endian) return H5Tcopy(t == DType::u8 ? H5T_STD_U8BE : t == DType::u16 ? H5T_STD_U16BE : H5T_STD_U32BE);
  return H5Tcopy(t == DType::u8 ? H5T_STD_U8LE : t == DType::u16 ? H5T_STD_U16LE : H5T_STD_U32LE);
}

// /entry/data/data (frames, det_r, det_c) of datatype `type`, one frame per chunk, bitshuffle+LZ4 through the
// plugin (H5Dwrite of the simulated counts from native memory), scan_shape attribute. Returns the path.
std::string write_through_plugin(const std::string& name, const sample::SampleSpec& s, hid_t type) {
  h5::ensure_bitshuffle_filter();
  const std::string path = test::temp_path(name);
  const auto frames = s.scan_rows * s.scan_cols;
  std::vector<std::uint8_t> counts(frames * s.det_rows * s.det_cols * dtype_size(s.dtype));
  sample::simulate_frames(s, 0, frames, counts.data());
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hsize_t dims[3] = {frames, s.det_rows, s.det_cols}, chunk[3] = {1, s.det_rows, s.det_cols};
  hid_t sp = H5Screate_simple(3, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 3, chunk);
  const unsigned cd[2] = {0, h5::kBitshuffleLz4};
  H5Pset_filter(dcpl, h5::kBitshuffleFilter, H5Z_FLAG_MANDATORY, 2, cd);
  hid_t d = H5Dcreate2(f, "/entry/data/data", type, sp, lcpl, dcpl, H5P_DEFAULT);
  EXPECT_GE(d, 0) << "HDF5 refused to create the test dataset";
  EXPECT_GE(H5Dwrite(d, native_type(s.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, counts.data()), 0);
  const long long shape[2] = {(long long)s.scan_rows, (long long)s.scan_cols};
  const hsize_t two = 2;
  hid_t asp = H5Screate_simple(1, &two, nullptr);
  hid_t a = H5Acreate2(d, "scan_shape", H5T_STD_I64LE, asp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_LLONG, shape);
  H5Aclose(a);
  H5Sclose(asp);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Pclose(lcpl);
  H5Fclose(f);
  return path;
}

std::string write_in_order(DType t, bool big_endian, const sample::SampleSpec& s) {
  hid_t type = file_type(t, big_endian);
  const std::string path =
      write_through_plugin(dtype_name(t) + (big_endian ? "_be" : "_le") + "_" + std::to_string(s.det_rows) + ".h5",
                           s, type);
  H5Tclose(type);
  return path;
}

// An unsigned type of `size` bytes whose count is `precision` bits at bit `offset` (the rest padding).
std::string write_with_bits(DType t, bool big_endian, std::size_t precision, std::size_t offset,
                            const sample::SampleSpec& s) {
  hid_t type = file_type(t, big_endian);
  EXPECT_GE(H5Tset_precision(type, precision), 0);
  EXPECT_GE(H5Tset_offset(type, offset), 0);
  const std::string path = write_through_plugin(dtype_name(t) + "_p" + std::to_string(precision) + "_o" +
                                                    std::to_string(offset) + (big_endian ? "_be" : "_le") + ".h5",
                                                s, type);
  H5Tclose(type);
  return path;
}

io::LoadOptions options(const std::string& backend, const std::string& decoder, const std::string& representation) {
  io::LoadOptions o;
  o.backend = backend;
  o.decoder = decoder;
  o.representation = representation;
  return o;
}

// The three geometries every path is checked on: whole, cropped (scan and detector regions), cropped and binned.
struct Geometry {
  const char* name;
  Region scan, detector;
  std::size_t bin_scan, bin_detector;
};
const Geometry kGeometries[] = {{"whole", {}, {}, 1, 1},
                                {"regions", {1, 2, 4, 6}, {2, 4, 12, 16}, 1, 1},
                                {"binned", {1, 2, 4, 6}, {2, 4, 12, 16}, 2, 4}};

// The loaded counts against the simulated ones cropped and binned by plain loops (exact).
void expect_counts(const Dataset& ds, const sample::SampleSpec& s, const Geometry& g) {
  dispatch_count_dtype(s.dtype, [&](auto z) {
    using T = decltype(z);
    const auto all = test::simulated<T>(s);
    if (g.bin_scan > 1 || g.bin_detector > 1) {
      ASSERT_EQ(ds.dtype(), DType::u32);
      EXPECT_EQ(test::as_vector<std::uint32_t>(ds.read()),
                (test::expected_load<T, std::uint32_t>(s, all, g.scan, g.detector, g.bin_scan, g.bin_detector)));
    } else {
      ASSERT_EQ(ds.dtype(), s.dtype);
      EXPECT_EQ(test::as_vector<T>(ds.read()), (test::expected_load<T, T>(s, all, g.scan, g.detector, 1, 1)));
    }
  });
}

Dataset load_geometry(const std::string& path, io::LoadOptions o, const Geometry& g) {
  o.scan_region = g.scan;
  o.detector_region = g.detector;
  o.bin_scan = g.bin_scan;
  o.bin_detector = g.bin_detector;
  return io::load(path, o);
}

}  // namespace

TEST(ByteOrder, InspectRecordsTheByteOrderAndTheBits) {
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool big : {false, true}) {
      const io::FileInfo fi = io::inspect(write_in_order(t, big, spec(t)));
      SCOPED_TRACE(dtype_name(t) + (big ? " big" : " little"));
      EXPECT_EQ(fi.dtype, t);
      EXPECT_EQ(fi.byte_order, big ? "big" : "little");
      EXPECT_EQ(fi.precision, 8 * dtype_size(t));
      EXPECT_EQ(fi.bit_offset, 0u);
      EXPECT_TRUE(fi.plain_bits());
      EXPECT_EQ(fi.swap_bytes(), big && t != DType::u8);  // one byte has no order to swap
      const nlohmann::json j = fi.to_json();
      EXPECT_EQ(j["byte_order"], big ? "big" : "little");
      EXPECT_EQ(j["precision"], 8 * dtype_size(t));
      EXPECT_EQ(j["bit_offset"], 0);
    }
  sample::SampleSpec s = spec(DType::u16);
  s.dose_per_frame = 500;  // counts below 2^12
  const io::FileInfo fi = io::inspect(write_with_bits(DType::u16, false, 12, 4, s));
  EXPECT_EQ(fi.precision, 12u);
  EXPECT_EQ(fi.bit_offset, 4u);
  EXPECT_FALSE(fi.plain_bits());
  EXPECT_EQ(fi.to_json()["precision"], 12);
  EXPECT_EQ(fi.to_json()["bit_offset"], 4);
}

// Issue 25 point 3: big-endian counts decoded as little-endian (BF 65,252,864 instead of 254,894). Every dtype, both
// byte orders, both cpu decoders, dense and encoded, whole / regions / binned: the counts exactly.
TEST(ByteOrder, BothOrdersLoadExactlyOnEveryCpuPath) {
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool big : {false, true}) {
      const sample::SampleSpec s = spec(t);
      const std::string path = write_in_order(t, big, s);
      for (const char* decoder : {"quantem", "hdf5"})
        for (const char* representation : {"dense", "encoded"})
          for (const Geometry& g : kGeometries) {
            SCOPED_TRACE(dtype_name(t) + (big ? " big-endian " : " little-endian ") + decoder + " " +
                         representation + " " + g.name);
            const Dataset ds = load_geometry(path, options("cpu", decoder, representation), g);
            EXPECT_EQ(ds.representation(), representation);
            EXPECT_EQ(ds.provenance().parameters["byte_order"], big ? "big" : "little");
            expect_counts(ds, s, g);
          }
    }
}

// Frames whose size leaves a partial bitshuffle block and a verbatim tail (9 x 9 = 81: a block of 80 elements and 1
// tail element; the tail is copied as stored, so it is swapped too).
TEST(ByteOrder, PartialBlocksAndTailsAreSwappedToo) {
  for (DType t : {DType::u16, DType::u32}) {
    const sample::SampleSpec s = spec(t, 9, 9);
    const std::string path = write_in_order(t, true, s);
    for (const char* decoder : {"quantem", "hdf5"}) {
      SCOPED_TRACE(dtype_name(t) + " " + decoder);
      expect_counts(io::load(path, options("cpu", decoder, "dense")), s, kGeometries[0]);
    }
  }
}

// Our encoder writes big-endian chunks (sample writer, SampleSpec::big_endian) that the HDF5 plugin reads back to
// the same counts, and a multi-file acquisition written through the plugin in big-endian order loads exactly.
TEST(ByteOrder, SampleWritersInBigEndianOrder) {
  for (DType t : {DType::u16, DType::u32}) {
    sample::SampleSpec s = spec(t);
    s.big_endian = true;
    const std::string path = test::write_small_sample(dtype_name(t) + "_be_sample.h5", s);
    EXPECT_EQ(io::inspect(path).byte_order, "big");
    for (const char* decoder : {"quantem", "hdf5"}) {  // hdf5: the plugin decodes our encoder's chunks
      SCOPED_TRACE(dtype_name(t) + " " + decoder);
      expect_counts(io::load(path, options("cpu", decoder, "dense")), s, kGeometries[0]);
    }
    const std::string master = test::temp_path(dtype_name(t) + "_be_master.h5");
    sample::write_sample_acquisition(master, s, 3);
    const io::FileInfo fi = io::inspect(master);
    EXPECT_EQ(fi.parts.size(), 3u);
    EXPECT_EQ(fi.byte_order, "big");
    for (const char* decoder : {"quantem", "hdf5"})
      for (const char* representation : {"dense", "encoded"})
        for (const Geometry& g : kGeometries) {
          SCOPED_TRACE(std::string("master ") + decoder + " " + representation + " " + g.name);
          expect_counts(load_geometry(master, options("cpu", decoder, representation), g), s, g);
        }
  }
}

// Parts of one acquisition stored in different byte orders: refused, naming the part and both orders.
TEST(ByteOrder, PartsInDifferentByteOrdersAreRefused) {
  sample::SampleSpec s = spec(DType::u16);
  const auto le_files = sample::write_sample_acquisition(test::temp_path("le_master.h5"), s, 2);
  s.big_endian = true;
  const auto be_files = sample::write_sample_acquisition(test::temp_path("be_master.h5"), s, 2);
  const std::string mixed = test::temp_path("mixed_master.h5");
  test::write_link_master(mixed, {"data_000001", "data_000002"}, {le_files[0], be_files[1]});
  expect_error<FormatError>([&] { io::inspect(mixed, "", 6, 8); },
                            {"part 2 (/entry/data/data_000002", "differs from part 1",
                             "byte order: big-endian vs little-endian"});
}

// Issue 25 point 4 (datatype): a count of fewer bits than the element (precision) or not at bit 0 (offset) was read
// as plain. Our decoder refuses it naming the dataset, precision and offset; the default cpu load reads it through
// HDF5's conversion (decoder hdf5), exactly.
TEST(DatatypeBits, PrecisionOrOffsetIsRefusedByOurDecoderAndConvertedByHdf5) {
  struct Case {
    DType t;
    bool big;
    std::size_t precision, offset;
  };
  for (const Case c : {Case{DType::u16, false, 12, 0}, Case{DType::u16, false, 12, 4}, Case{DType::u16, true, 12, 4},
                       Case{DType::u32, false, 20, 8}, Case{DType::u8, false, 6, 2}}) {
    sample::SampleSpec s = spec(c.t);
    s.dose_per_frame = c.t == DType::u8 ? 20 : 500;  // counts that fit the precision
    dispatch_count_dtype(c.t, [&](auto z) {
      using T = decltype(z);
      for (const T v : test::simulated<T>(s)) ASSERT_LT(std::uint64_t(v), std::uint64_t(1) << c.precision);
    });
    const std::string path = write_with_bits(c.t, c.big, c.precision, c.offset, s);
    SCOPED_TRACE(path);
    const std::string p = std::to_string(c.precision) + " bits (precision) at bit offset " + std::to_string(c.offset);
    expect_error<FormatError>([&] { io::load(path, options("cpu", "quantem", "dense")); },
                              {"'/entry/data/data' in '" + path + "'", p, "decoder='hdf5'"});
    for (const char* representation : {"dense", "encoded"}) {
      const Dataset ds = io::load(path, options("cpu", "auto", representation));
      EXPECT_EQ(ds.provenance().parameters["decoder"], "hdf5 filter plugin");
      expect_counts(ds, s, kGeometries[0]);
      expect_counts(load_geometry(path, options("cpu", "hdf5", representation), kGeometries[2]), s, kGeometries[2]);
    }
  }
}

// The GPU decoder (byte swap inside the decode kernels) against the cpu load of the same big-endian file and the
// simulated counts: every dtype, frames on the fast unshuffle path (64 x 64), with a partial block and a tail
// (9 x 9, 45 x 47: the per-byte path and the tail copy), dense, encoded (with the live-group marks at 64 x 64),
// regions and binned.
TEST(ByteOrderCuda, BigEndianEqualsTheCpuLoadOnEveryPath) {
  QGPU_REQUIRE_CUDA();
  const std::pair<std::size_t, std::size_t> sizes[] = {{64, 64}, {9, 9}, {45, 47}};
  for (const auto& [r, c] : sizes)
    for (DType t : {DType::u8, DType::u16, DType::u32}) {
      const sample::SampleSpec s = spec(t, r, c);
      const std::string path = write_in_order(t, true, s);
      for (const char* representation : {"dense", "encoded"})
        for (const Geometry& g0 : kGeometries) {
          Geometry g = g0;
          if (r < 20) g.detector = {};  // 9 x 9: the whole detector
          if (r < 20 && g.bin_detector > 1) g.bin_detector = 3;
          SCOPED_TRACE(std::to_string(r) + "x" + std::to_string(c) + " " + dtype_name(t) + " " + representation +
                       " " + g.name);
          const Dataset gpu = load_geometry(path, options("cuda", "auto", representation), g);
          const Dataset cpu = load_geometry(path, options("cpu", "quantem", representation), g);
          EXPECT_EQ(gpu.backend(), Backend::cuda);
          EXPECT_EQ(gpu.provenance().parameters["byte_order"], "big");
          ASSERT_EQ(gpu.shape(), cpu.shape());
          EXPECT_TRUE(gpu.read().bytes == cpu.read().bytes) << "GPU decode differs from the cpu decode";
          expect_counts(gpu, s, g);
        }
    }
}

TEST(ByteOrderCuda, PrecisionOrOffsetIsRefused) {
  QGPU_REQUIRE_CUDA();
  sample::SampleSpec s = spec(DType::u16);
  s.dose_per_frame = 500;
  const std::string path = write_with_bits(DType::u16, false, 12, 4, s);
  expect_error<FormatError>([&] { io::load(path, options("cuda", "auto", "dense")); },
                            {"'/entry/data/data'", "12 bits (precision) at bit offset 4", "the GPU decoder"});
}
