// Multi-file EIGER/ARINA acquisitions: a master's data_NNNNNN links (or a virtual dataset) load as one scan in
// order, scan shape from metadata or the caller, pixel mask, and the errors for broken acquisitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>

#include "acquisition_files.hpp"
#include "core/error.hpp"
#include "io/hdf5/cuda/apply_pixel_mask.hpp"
#include "io/hdf5/load.hpp"
#include "io/hdf5/pixel_mask.hpp"
#include "load_reference.hpp"
#include "support/cuda_required.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;
namespace fs = std::filesystem;

namespace {

sample::SampleSpec spec(std::size_t rows, std::size_t cols, std::size_t det = 16, DType t = DType::u16) {
  sample::SampleSpec s;
  s.scan_rows = rows;
  s.scan_cols = cols;
  s.det_rows = s.det_cols = det;
  s.dtype = t;
  s.seed = 11;
  return s;
}

io::LoadOptions cpu() {
  io::LoadOptions o;
  o.backend = "cpu";
  return o;
}

// The master of a fresh acquisition in its own folder (data files beside it).
std::string acquisition(const std::string& name, const sample::SampleSpec& s, std::size_t files) {
  const fs::path dir = test::temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string master = (dir / (name + "_master.h5")).string();
  sample::write_sample_acquisition(master, s, files);
  return master;
}

template <class T> std::vector<T> frames_of(const Dataset& d) { return test::as_vector<T>(d.read()); }

// Frames [0, n) of a data file's /entry/data/data read by the HDF5 library directly.
std::vector<std::uint16_t> read_data_file(const std::string& path, std::size_t n, std::size_t frame_pixels) {
  h5::Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  h5::Handle d(H5Dopen2(f, "/entry/data/data", H5P_DEFAULT), H5Dclose);
  std::vector<std::uint16_t> v(n * frame_pixels);
  EXPECT_GE(H5Dread(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  return v;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Acquisition, FourLinkedFilesLoadAsTheSameScanAsOneFile) {
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    const sample::SampleSpec s = spec(8, 8, 16, t);
    const std::string master = acquisition("four", s, 4);
    const std::string single = test::write_small_sample("single.h5", s);
    const io::FileInfo fi = io::inspect(master);
    EXPECT_EQ(fi.source_kind, "linked files");
    EXPECT_EQ(fi.dataset_path, "/entry/data/data_000001");
    EXPECT_EQ(fi.shape, (Shape4D{8, 8, 16, 16}));
    EXPECT_EQ(fi.dims, (std::vector<std::size_t>{64, 16, 16}));
    EXPECT_EQ(fi.chunk_dims, (std::vector<std::size_t>{1, 16, 16}));
    EXPECT_TRUE(fi.bitshuffle_lz4);
    EXPECT_TRUE(fi.one_frame_per_chunk);
    EXPECT_EQ(fi.chunks_expected, 64u);
    EXPECT_EQ(fi.chunks_written, 64u);
    EXPECT_TRUE(fi.ready);
    EXPECT_FALSE(fi.calibration.empty());  // the master carries the sample's calibration, as the single file
    EXPECT_EQ(fi.calibration, io::inspect(single).calibration);
    ASSERT_EQ(fi.parts.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(fi.parts[i].first_frame, 16 * i);
      EXPECT_EQ(fi.parts[i].frames, 16u);
      EXPECT_EQ(fs::path(fi.parts[i].file).filename().string(), "four_data_00000" + std::to_string(i + 1) + ".h5");
      EXPECT_EQ(fi.parts[i].dataset_path, "/entry/data/data");
    }
    const Dataset a = io::load(master, cpu()), b = io::load(single, cpu());
    ASSERT_EQ(a.shape(), b.shape());
    ASSERT_EQ(a.dtype(), t);
    const HostArray4D ha = a.read(), hb = b.read();
    EXPECT_TRUE(ha.bytes == hb.bytes) << "multi-file load differs from the single-file load, dtype "
                                      << dtype_name(t);
    dispatch_count_dtype(t, [&](auto z) {
      using T = decltype(z);
      EXPECT_EQ(test::as_vector<T>(ha), test::simulated<T>(s));  // every count, against the simulator
    });
    EXPECT_EQ(a.provenance().parameters.at("parts").get<std::size_t>(), 4u);
  }
}

TEST(Acquisition, FirstFrameOfPartThreeLandsAtFlatIndex32) {
  const sample::SampleSpec s = spec(8, 8);
  const std::string master = acquisition("order", s, 4);
  const io::FileInfo fi = io::inspect(master);
  ASSERT_EQ(fi.parts.size(), 4u);
  EXPECT_EQ(fi.parts[2].first_frame, 32u);
  const std::size_t fp = 16 * 16;
  const std::vector<std::uint16_t> part3 = read_data_file(fi.parts[2].file, 16, fp);
  const std::vector<std::uint16_t> all = frames_of<std::uint16_t>(io::load(master, cpu()));
  // Flat index 32 is scan (4, 0); part 3's frames fill scan rows 4 and 5.
  EXPECT_TRUE(std::equal(part3.begin(), part3.end(), all.begin() + 32 * fp));
  EXPECT_FALSE(std::equal(part3.begin(), part3.begin() + fp, all.begin() + 16 * fp));  // frames differ
}

TEST(Acquisition, RowsStraddlingPartsWithRegionAndBinning) {
  // 6 x 10 scan in 4 files of 15 frames: scan rows 1, 2, 4 straddle two files.
  const sample::SampleSpec s = spec(6, 10);
  const std::string master = acquisition("straddle", s, 4);
  ASSERT_EQ(io::inspect(master).parts.size(), 4u);
  io::LoadOptions o = cpu();
  o.scan_region = {1, 2, 4, 6};
  o.detector_region = {2, 2, 12, 12};
  o.bin_scan = 2;
  o.bin_detector = 3;
  const Dataset d = io::load(master, o);
  const auto all = test::simulated<std::uint16_t>(s);
  EXPECT_EQ(frames_of<std::uint32_t>(d),
            (test::expected_load<std::uint16_t, std::uint32_t>(s, all, o.scan_region, o.detector_region, 2, 3)));
}

TEST(Acquisition, ScanShapeFromNtriggerGivenOrMismatched) {
  const sample::SampleSpec s = spec(6, 8);  // 48 frames, not square
  const std::string master = acquisition("ntrigger", s, 4);
  const io::FileInfo fi = io::inspect(master);
  EXPECT_EQ(fi.ntrigger, 6);
  EXPECT_EQ(fi.nimages, 8);
  EXPECT_EQ(fi.shape, (Shape4D{6, 8, 16, 16}));
  EXPECT_EQ(fi.scan_shape_source, "metadata ntrigger x nimages");

  const io::FileInfo given = io::inspect(master, "", 4, 12);
  EXPECT_EQ(given.shape, (Shape4D{4, 12, 16, 16}));
  EXPECT_EQ(given.scan_shape_source, "given");
  io::LoadOptions o = cpu();
  o.scan_rows = 4;
  o.scan_cols = 12;
  const Dataset d = io::load(master, o);
  EXPECT_EQ(d.shape(), (Shape4D{4, 12, 16, 16}));
  EXPECT_EQ(frames_of<std::uint16_t>(d), test::simulated<std::uint16_t>(s));  // same frames, flat order

  const std::string msg = message_of([&] { io::inspect(master, "", 5, 10); });
  EXPECT_NE(msg.find("given scan shape 5x10 does not match the 48 frames"), std::string::npos) << msg;
  EXPECT_THROW(io::inspect(master, "", 5, 10), FormatError);
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW(io::inspect(master, "", huge, 2), RegionError);  // overflows: no wrap-around to a match
  EXPECT_THROW(io::inspect(master, "", std::size_t(1) << 32, std::size_t(1) << 32), RegionError);
}

TEST(Acquisition, NonSquareWithoutMetadataAsksForTheScanShape) {
  const sample::SampleSpec s = spec(6, 8);
  const std::string master = acquisition("nometa", s, 4);
  const io::FileInfo with_meta = io::inspect(master);
  std::vector<std::string> names, targets;
  for (std::size_t i = 0; i < 4; ++i) {
    names.push_back("data_00000" + std::to_string(i + 1));
    targets.push_back(test::file_name(with_meta.parts[i].file));
  }
  const std::string bare = (fs::path(master).parent_path() / "bare.h5").string();
  test::write_link_master(bare, names, targets);
  const std::string msg = message_of([&] { io::inspect(bare); });
  EXPECT_NE(msg.find("48 frames, no scan_shape attribute and no square scan: give scan_shape"), std::string::npos)
      << msg;
  EXPECT_EQ(io::inspect(bare, "", 8, 6).shape, (Shape4D{8, 6, 16, 16}));

  // 64 frames without metadata: a square scan.
  const std::string sq_master = acquisition("square", spec(8, 8), 4);
  const io::FileInfo sq_info = io::inspect(sq_master);
  std::vector<std::string> sq_targets;
  for (const auto& p : sq_info.parts) sq_targets.push_back(test::file_name(p.file));
  const std::string sq = (fs::path(sq_master).parent_path() / "bare.h5").string();
  test::write_link_master(sq, names, sq_targets);
  const io::FileInfo fi = io::inspect(sq);
  EXPECT_EQ(fi.shape, (Shape4D{8, 8, 16, 16}));
  EXPECT_EQ(fi.scan_shape_source, "square frame count");
  EXPECT_FALSE(fi.has_pixel_mask);
}

TEST(Acquisition, MetadataDisagreeingWithTheDataIsAnError) {
  // The last data file lost: no gap in the links, but ntrigger x nimages announces more frames.
  const sample::SampleSpec s = spec(8, 8);
  const std::string master = acquisition("lost", s, 4);
  {
    h5::Handle f(H5Fopen(master.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    ASSERT_GE(H5Ldelete(f, "/entry/data/data_000004", H5P_DEFAULT), 0);
  }
  const std::string msg = message_of([&] { io::inspect(master); });
  EXPECT_NE(msg.find("announces ntrigger 8 x nimages 8 = 64 frames but the data hold 48"), std::string::npos) << msg;
  EXPECT_THROW(io::inspect(master), FormatError);
}

TEST(Acquisition, MissingDataFileIsNamed) {
  const std::string master = acquisition("missing", spec(8, 8), 4);
  const std::string victim = io::inspect(master).parts[1].file;
  fs::remove(victim);
  const std::string msg = message_of([&] { io::inspect(master); });
  EXPECT_NE(msg.find("external link /entry/data/data_000002"), std::string::npos) << msg;
  EXPECT_NE(msg.find("points to missing file '" + victim + "'"), std::string::npos) << msg;
  EXPECT_THROW(io::inspect(master), IoError);
  EXPECT_THROW(io::load(master, cpu()), IoError);
}

TEST(Acquisition, GapInLinkNumbersIsNamed) {
  const std::string master = acquisition("gap", spec(8, 8), 4);
  const io::FileInfo fi = io::inspect(master);
  const std::string gap = (fs::path(master).parent_path() / "gap.h5").string();
  test::write_link_master(gap, {"data_000001", "data_000003"},
                          {test::file_name(fi.parts[0].file), test::file_name(fi.parts[2].file)});
  const std::string msg = message_of([&] { io::inspect(gap); });
  EXPECT_NE(msg.find("/entry/data/data_000002 is missing"), std::string::npos) << msg;
  EXPECT_THROW(io::inspect(gap), IoError);
}

TEST(Acquisition, DataFileWithoutTheDatasetIsNamed) {
  const std::string master = acquisition("nodata", spec(8, 8), 2);
  const std::string target = io::inspect(master).parts[1].file;
  {
    h5::Handle f(H5Fopen(target.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    ASSERT_GE(H5Ldelete(f, "/entry/data/data", H5P_DEFAULT), 0);
  }
  const std::string msg = message_of([&] { io::inspect(master); });
  EXPECT_NE(msg.find("/entry/data/data_000002"), std::string::npos) << msg;
  EXPECT_NE(msg.find(target), std::string::npos) << msg;
  EXPECT_THROW(io::inspect(master), IoError);
}

TEST(Acquisition, PartsDisagreeingOnDetectorShapeAreNamed) {
  const std::string a = acquisition("det16", spec(4, 4, 16), 1);
  const std::string b = acquisition("det24", spec(4, 4, 24), 1);
  const std::string fa = io::inspect(a).parts[0].file, fb = io::inspect(b).parts[0].file;
  const std::string mixed = test::temp_path("mixed.h5");
  test::write_link_master(mixed, {"data_000001", "data_000002"}, {fa, fb});  // absolute targets
  const std::string msg = message_of([&] { io::inspect(mixed); });
  EXPECT_NE(msg.find("part 2 (/entry/data/data_000002"), std::string::npos) << msg;
  EXPECT_NE(msg.find("detector shape: 24x24 vs 16x16"), std::string::npos) << msg;
  EXPECT_THROW(io::inspect(mixed), FormatError);

  const std::string c = acquisition("u8", spec(4, 4, 16, DType::u8), 1);
  const std::string dt = test::temp_path("dtypes.h5");
  test::write_link_master(dt, {"data_000001", "data_000002"}, {fa, io::inspect(c).parts[0].file});
  EXPECT_NE(message_of([&] { io::inspect(dt); }).find("dtype: uint8 vs uint16"), std::string::npos);
}

TEST(Acquisition, VirtualDatasetOverWholeFiles) {
  const sample::SampleSpec s = spec(8, 8);
  const std::string master = acquisition("vds", s, 4);
  const io::FileInfo linked = io::inspect(master);
  std::vector<std::string> sources;
  for (const auto& p : linked.parts) sources.push_back(test::file_name(p.file));
  const std::string vds = (fs::path(master).parent_path() / "vds.h5").string();
  // Mappings given out of order: the parts come back sorted by frame.
  test::write_vds_master(vds, {sources[2], sources[0], sources[3], sources[1]}, {32, 0, 48, 16}, {16, 16, 16, 16},
                         16, 16);
  const io::FileInfo fi = io::inspect(vds);
  EXPECT_EQ(fi.source_kind, "virtual dataset");
  EXPECT_EQ(fi.dataset_path, "/entry/data/data");
  ASSERT_EQ(fi.parts.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(fi.parts[i].file, linked.parts[i].file);
    EXPECT_EQ(fi.parts[i].first_frame, 16 * i);
  }
  EXPECT_EQ(fi.shape, (Shape4D{8, 8, 16, 16}));
  EXPECT_TRUE(fi.bitshuffle_lz4);
  EXPECT_EQ(frames_of<std::uint16_t>(io::load(vds, cpu())), test::simulated<std::uint16_t>(s));

  const std::string partial = (fs::path(master).parent_path() / "vds_partial.h5").string();
  test::write_vds_master(partial, sources, {0, 16, 32, 48}, {16, 16, 16, 16}, 16, 16, 8);
  const std::string msg = message_of([&] { io::inspect(partial); });
  EXPECT_NE(msg.find("not a plain concatenation"), std::string::npos) << msg;
  EXPECT_THROW(io::inspect(partial), FormatError);
}

TEST(Acquisition, PixelMaskCountedAndZeroedOnCpu) {
  const sample::SampleSpec s = spec(8, 8, 24);
  const std::string master = acquisition("mask", s, 4);
  const io::FileInfo fi = io::inspect(master);
  const std::vector<std::uint32_t> bad = sample::sample_bad_pixels(s);
  ASSERT_EQ(bad.size(), 5u);
  EXPECT_TRUE(fi.has_pixel_mask);
  EXPECT_EQ(fi.bad_pixels, bad);
  EXPECT_EQ(fi.to_json().at("pixel_mask").at("bad_pixels").get<std::size_t>(), 5u);

  const Dataset kept = io::load(master, cpu());
  io::LoadOptions o = cpu();
  o.pixel_mask = "zero";
  const Dataset zeroed = io::load(master, o);
  EXPECT_EQ(zeroed.provenance().parameters.at("pixel_mask"), "zero");
  EXPECT_EQ(zeroed.provenance().parameters.at("bad_pixels_zeroed").get<std::size_t>(), 5u);
  EXPECT_EQ(kept.provenance().parameters.at("pixel_mask"), "keep");
  const auto k = frames_of<std::uint16_t>(kept), z = frames_of<std::uint16_t>(zeroed);
  ASSERT_EQ(k.size(), z.size());
  const std::size_t fp = 24 * 24;
  std::size_t changed = 0, centre_nonzero = 0;
  for (std::size_t f = 0; f < 64; ++f)
    for (std::size_t px = 0; px < fp; ++px) {
      const bool is_bad = std::binary_search(bad.begin(), bad.end(), std::uint32_t(px));
      const std::size_t i = f * fp + px;
      if (is_bad) {
        EXPECT_EQ(z[i], 0) << "frame " << f << " pixel " << px;
        changed += k[i] != 0;
      } else {
        ASSERT_EQ(z[i], k[i]) << "frame " << f << " pixel " << px;
      }
    }
  for (std::size_t f = 0; f < 64; ++f) centre_nonzero += k[f * fp + 12 * 24 + 12] != 0;
  EXPECT_EQ(centre_nonzero, 64u);  // the centre bad pixel holds counts in every frame: zeroing is visible
  EXPECT_GE(changed, 64u);

  // Masking applies to the full frame before the detector crop and binning.
  std::vector<std::uint16_t> masked = test::simulated<std::uint16_t>(s);
  io::apply_pixel_mask_cpu(masked.data(), DType::u16, 64, fp, bad.data(), bad.size());
  o.detector_region = {6, 6, 12, 12};
  o.bin_detector = 2;
  EXPECT_EQ(frames_of<std::uint32_t>(io::load(master, o)),
            (test::expected_load<std::uint16_t, std::uint32_t>(s, masked, {}, o.detector_region, 1, 2)));
}

TEST(Acquisition, PixelMaskErrors) {
  const sample::SampleSpec s = spec(4, 4);
  io::LoadOptions o = cpu();
  o.pixel_mask = "zero";
  const std::string single = test::write_small_sample("nomask.h5", s);
  EXPECT_THROW(io::load(single, o), IoError);  // asked to zero, no mask in the file
  o.pixel_mask = "drop";
  const std::string master = acquisition("maskerr", s, 2);
  EXPECT_THROW(io::load(master, o), InvalidArgument);
  {
    h5::Handle f(H5Fopen(master.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    ASSERT_GE(H5Ldelete(f, io::kPixelMaskPath, H5P_DEFAULT), 0);
    test::write_u32_dataset(f, io::kPixelMaskPath, {16, 8}, std::vector<std::uint32_t>(128, 0));
  }
  const std::string msg = message_of([&] { io::inspect(master); });
  EXPECT_NE(msg.find("has shape 16x8; the detector is 16x16"), std::string::npos) << msg;
  EXPECT_THROW(io::inspect(master), FormatError);
}

TEST(Acquisition, PixelMaskCpuTwinZeroesOnlyListedPixels) {
  std::vector<std::uint32_t> frames(3 * 6);
  for (std::size_t i = 0; i < frames.size(); ++i) frames[i] = std::uint32_t(i + 1);
  const std::uint32_t px[] = {0, 4};
  io::apply_pixel_mask_cpu(frames.data(), DType::u32, 3, 6, px, 2);
  EXPECT_EQ(frames, (std::vector<std::uint32_t>{0, 2, 3, 4, 0, 6, 0, 8, 9, 10, 0, 12, 0, 14, 15, 16, 0, 18}));
}

// The GPU load reads multi-part acquisitions through the same chunk sources: equal to the CPU load, also with the
// pixel mask zeroed, regions, binning and batches whose rows straddle two data files.
TEST(Acquisition, CudaLoadEqualsCpuOnMultiPartAcquisitions) {
  QGPU_REQUIRE_CUDA();
  const std::string master = acquisition("cuda", spec(8, 8), 4);
  for (const std::string mask : {"keep", "zero"})
    for (const auto& [region, bin] : {std::pair{Region{}, std::size_t(1)}, {Region{1, 2, 6, 4}, std::size_t(2)}}) {
      io::LoadOptions o;
      o.pixel_mask = mask;
      o.scan_region = region;
      o.bin_scan = bin;
      o.batch_bytes = 3000;  // many batches, some rows across two data files
      o.backend = "cuda";
      const Dataset gpu = io::load(master, o);
      o.backend = "cpu";
      const Dataset cpu = io::load(master, o);
      o.decoder = "hdf5";
      const Dataset ref = io::load(master, o);
      SCOPED_TRACE(mask + " bin " + std::to_string(bin));
      ASSERT_EQ(gpu.shape(), cpu.shape());
      EXPECT_TRUE(gpu.read().bytes == cpu.read().bytes);
      EXPECT_TRUE(ref.read().bytes == cpu.read().bytes);
    }
}

TEST(Acquisition, CudaPixelMaskKernelEqualsCpuTwin) {
  QGPU_REQUIRE_CUDA();
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    const std::size_t n = 37, fp = 96 * 80, es = dtype_size(t);
    std::vector<std::uint8_t> host(n * fp * es);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::uint8_t(1 + (i * 7919) % 251);
    const std::vector<std::uint32_t> px = {0, 5, 81, 4000, 7679};
    std::vector<std::uint8_t> expect = host;
    io::apply_pixel_mask_cpu(expect.data(), t, n, fp, px.data(), px.size());
    void* d_frames = nullptr;
    std::uint32_t* d_px = nullptr;
    ASSERT_EQ(cudaMalloc(&d_frames, host.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_px), px.size() * 4), cudaSuccess);
    cudaMemcpy(d_frames, host.data(), host.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(d_px, px.data(), px.size() * 4, cudaMemcpyHostToDevice);
    io::cuda::apply_pixel_mask(d_frames, t, n, fp, d_px, px.size(), nullptr);
    std::vector<std::uint8_t> got(host.size());
    cudaMemcpy(got.data(), d_frames, got.size(), cudaMemcpyDeviceToHost);
    cudaFree(d_frames);
    cudaFree(d_px);
    EXPECT_TRUE(got == expect) << "GPU pixel mask differs from the CPU twin, dtype " << dtype_name(t);
  }
}

TEST(Acquisition, ArinaStyleNtriggerEqualToTheFrameCount) {
  // ARINA-style masters may state the frame count in ntrigger (nimages 1 or also the count): a square scan.
  const std::string master = acquisition("arina", spec(8, 8), 4);
  for (long long nimages : {1LL, 64LL}) {
    {
      h5::Handle f(H5Fopen(master.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
      const std::string base = "/entry/instrument/detector/detectorSpecific/";
      for (auto [name, v] : {std::pair<const char*, long long>{"ntrigger", 64}, {"nimages", nimages}}) {
        h5::Handle d(H5Dopen2(f, (base + name).c_str(), H5P_DEFAULT), H5Dclose);
        ASSERT_GE(H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v), 0);
      }
    }
    const io::FileInfo fi = io::inspect(master);
    EXPECT_EQ(fi.ntrigger, 64);
    EXPECT_EQ(fi.nimages, nimages);
    EXPECT_EQ(fi.shape, (Shape4D{8, 8, 16, 16}));
    EXPECT_EQ(fi.scan_shape_source, "square frame count");
  }
}

TEST(Acquisition, OneLinkedFileAndUnevenParts) {
  const sample::SampleSpec s = spec(8, 8);
  const std::string one = acquisition("one", s, 1);
  const io::FileInfo fi1 = io::inspect(one);
  EXPECT_EQ(fi1.source_kind, "external link");
  ASSERT_EQ(fi1.parts.size(), 1u);
  EXPECT_EQ(fs::path(fi1.parts[0].file).filename().string(), "one_data_000001.h5");
  EXPECT_EQ(frames_of<std::uint16_t>(io::load(one, cpu())), test::simulated<std::uint16_t>(s));

  const std::string three = acquisition("three", s, 3);  // 22 + 22 + 20 frames
  const io::FileInfo fi3 = io::inspect(three);
  ASSERT_EQ(fi3.parts.size(), 3u);
  EXPECT_EQ(fi3.parts[1].first_frame, 22u);
  EXPECT_EQ(fi3.parts[2].first_frame, 44u);
  EXPECT_EQ(fi3.parts[2].frames, 20u);
  io::LoadOptions o = cpu();
  o.scan_region = {2, 1, 4, 6};  // rows 2 (frames 16..23) and 5 (40..47) straddle parts
  const auto all = test::simulated<std::uint16_t>(s);
  EXPECT_EQ(frames_of<std::uint16_t>(io::load(three, o)),
            (test::expected_load<std::uint16_t, std::uint16_t>(s, all, o.scan_region, {}, 1, 1)));
}
