// Fortran-order .npy (io/source/load_transposed.hpp) against the same counts written in C order and against the index
// mapping written out here; the user-given pixel mask (io/source/given_pixel_mask.hpp) on a Merlin acquisition; the
// GPU scatter and loads against the host (skipped without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "device/cuda/device_buffer.hpp"
#include "io/hdf5/load.hpp"
#include "io/npy/npy.hpp"
#include "io/sample/sample.hpp"
#include "io/source/cuda/scatter_transposed.hpp"
#include "io/source/load_transposed.hpp"
#include "support/cuda_required.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

// Counts of a (SR, SC, DR, DC) array in C order, every value distinct where the dtype allows, with high bytes set
// (the byte order matters).
// cap: the largest value (binning sums up to 36 of them in uint32).
std::vector<std::uint32_t> values(std::size_t n, DType t, std::uint64_t cap = 0xffffffffull) {
  std::vector<std::uint32_t> v(n);
  const std::uint64_t top = std::min<std::uint64_t>(cap, t == DType::u8 ? 0xff : t == DType::u16 ? 0xffff : cap);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::uint32_t((i * 2654435761ull + 12345) % (top + 1));
  return v;
}

void put(std::string& out, std::uint32_t v, std::size_t es, bool big) {
  for (std::size_t k = 0; k < es; ++k) out += char((v >> (8 * (big ? es - 1 - k : k))) & 0xff);
}

std::string descr(DType t, bool big) {
  const std::size_t es = dtype_size(t);
  return std::string(es == 1 ? "|" : big ? ">" : "<") + "u" + std::to_string(es);
}

// Writes v (C order, shape `shape`) as a .npy in C or Fortran order.
std::string write_npy(const std::string& suffix, const std::vector<std::uint32_t>& v,
                      const std::vector<std::size_t>& shape, DType t, bool big, bool fortran) {
  const std::size_t es = dtype_size(t);
  std::string data;
  data.reserve(v.size() * es);
  if (!fortran) {
    for (std::uint32_t x : v) put(data, x, es, big);
  } else {  // Fortran order: the first index varies fastest
    const std::size_t n = v.size();
    for (std::size_t f = 0; f < n; ++f) {
      std::size_t rest = f, c = 0, stride = n;
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const std::size_t i = rest % shape[d];
        rest /= shape[d];
        stride /= shape[d];
        c += i * stride;
      }
      put(data, v[c], es, big);
    }
  }
  const std::string path = test::temp_path(suffix);
  std::ofstream(path, std::ios::binary) << io::npy_header(descr(t, big), shape, fortran) << data;
  return path;
}

std::vector<std::uint32_t> as_u32(const HostArray4D& h) {
  std::vector<std::uint32_t> out(h.shape.elements());
  dispatch_count_dtype(h.dtype, [&](auto z) {
    using T = decltype(z);
    const T* p = reinterpret_cast<const T*>(h.bytes.data());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  });
  return out;
}

io::LoadOptions opts(const std::string& backend) {
  io::LoadOptions o;
  o.backend = backend;
  o.representation = "dense";
  return o;
}

// Loads with the given regions/bins/batch size.
HostArray4D load_host(const std::string& path, const io::LoadOptions& o) { return io::load(path, o).read(); }

}  // namespace

TEST(FortranNpy, LoadsExactlyEveryDtypeByteOrderAndRank) {
  const std::vector<std::size_t> shape4 = {5, 6, 7, 9};
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool big : {false, true}) {
      const auto v = values(5 * 6 * 7 * 9, t);
      const std::string f4 = write_npy("f4.npy", v, shape4, t, big, true);
      const io::FileInfo fi = io::inspect(f4);
      EXPECT_TRUE(fi.transposed.present);
      EXPECT_TRUE(fi.transposed.scan_rows_fastest);
      EXPECT_NE(fi.source_kind.find("Fortran order"), std::string::npos);
      EXPECT_EQ(fi.metadata.at("fortran_order"), true);
      const Dataset ds = io::load(f4, opts("cpu"));
      EXPECT_EQ(ds.shape(), (Shape4D{5, 6, 7, 9}));
      EXPECT_EQ(ds.dtype(), t);
      EXPECT_EQ(as_u32(ds.read()), v) << dtype_name(t) << " big " << big;
      EXPECT_EQ(ds.provenance().parameters.at("layout"), "fortran_order");
      // Slabs that cut pixel planes anywhere (7 elements) give the same.
      io::LoadOptions small = opts("cpu");
      small.batch_bytes = 7 * dtype_size(t);
      EXPECT_EQ(as_u32(load_host(f4, small)), v);
      // 3D stack of frames in C-order scan order, scan shape given.
      const std::string f3 = write_npy("f3.npy", v, {30, 7, 9}, t, big, true);
      io::LoadOptions o3 = opts("cpu");
      o3.scan_rows = 5, o3.scan_cols = 6;
      EXPECT_FALSE(io::inspect(f3, "", 5, 6).transposed.scan_rows_fastest);
      EXPECT_EQ(as_u32(load_host(f3, o3)), v);
    }
}

TEST(FortranNpy, RegionsBinsMaskAndEncodedEqualTheCOrderLoad) {
  const std::vector<std::size_t> shape = {6, 8, 10, 12};
  for (DType t : {DType::u16, DType::u32}) {
    const auto v = values(6 * 8 * 10 * 12, t, 0x03ffffff);
    const std::string f = write_npy("f.npy", v, shape, t, true, true);
    const std::string c = write_npy("c.npy", v, shape, t, false, false);
    const std::string mask = test::temp_path("mask.txt");
    std::ofstream(mask) << "# bad pixels\n0 0\n3, 4\n9 11\n\n5 7  # centre\n";
    for (int k = 0; k < 5; ++k) {
      io::LoadOptions o = opts("cpu");
      if (k == 0) o.scan_region = {1, 2, 4, 6}, o.detector_region = {2, 1, 6, 9};
      if (k == 1) o.bin_scan = 2, o.bin_detector = 2;
      if (k == 2) o.scan_region = {0, 2, 6, 4}, o.detector_region = {1, 3, 6, 6}, o.bin_detector = 3, o.bin_scan = 2;
      if (k == 3) o.pixel_mask_file = mask, o.detector_region = {0, 4, 10, 8}, o.bin_detector = 2;
      if (k == 4) o.pixel_mask_file = mask, o.representation = "encoded";
      const HostArray4D want = load_host(c, o);
      o.batch_bytes = 1000;  // several slabs
      const Dataset got = io::load(f, o);
      EXPECT_EQ(got.read().shape, want.shape) << k;
      EXPECT_EQ(got.dtype(), want.dtype) << k;
      EXPECT_EQ(as_u32(got.read()), as_u32(want)) << k;
      if (k == 4) EXPECT_EQ(got.representation(), "encoded");
      if (k >= 3) EXPECT_EQ(got.provenance().parameters.at("bad_pixels_zeroed"), 4);
    }
  }
}

TEST(FortranNpy, RefusalsNameTheFileAndWhy) {
  const auto v = values(4 * 4 * 3 * 3, DType::u16);
  const std::string f = write_npy("f.npy", v, {4, 4, 3, 3}, DType::u16, false, true);
  io::LoadOptions o = opts("cpu");
  o.scan_rows = 2, o.scan_cols = 8;
  test::expect_error<FormatError>([&] { io::load(f, o); }, {f, "Fortran-order", "4 x 4", "2 x 8"});
  io::LoadOptions d = opts("cpu");
  d.direct_io = true;
  test::expect_error<InvalidArgument>([&] { io::load(f, d); }, {f, "direct_io", "Fortran order"});
  io::LoadOptions tiny = opts("cpu");
  tiny.admission_limit_bytes = 10;
  tiny.representation = "auto";
  test::expect_error<InvalidArgument>([&] { io::load(f, tiny); }, {"Fortran-order .npy loads dense"});
  // Binned sums past uint32 are refused, not wrapped.
  const std::string big = write_npy("big.npy", std::vector<std::uint32_t>(16, 0x80000000u), {2, 2, 2, 2}, DType::u32,
                                    false, true);
  io::LoadOptions b = opts("cpu");
  b.bin_detector = 2;
  test::expect_error<FormatError>([&] { io::load(big, b); }, {big, "overflow uint32"});
  // Truncated data: the reader names the file.
  const std::string cut = test::temp_path("cut.npy");
  {
    std::ifstream in(f, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << all.substr(0, all.size() - 1);
  }
  test::expect_error<FormatError>([&] { io::load(cut, opts("cpu")); }, {cut, "truncated"});
}

namespace {

// A Merlin acquisition of the sample frames (12-bit, single chip) and its counts loaded without a mask.
struct MerlinCase {
  std::string mib;
  HostArray4D plain;
  std::size_t det_rows = 0, det_cols = 0;
};

MerlinCase merlin_case(const std::string& suffix) {
  sample::SampleSpec s;
  s.scan_rows = 3, s.scan_cols = 4, s.det_rows = 16, s.det_cols = 12, s.dtype = DType::u16, s.seed = 5;
  s.dose_per_frame = 5000;
  MerlinCase m;
  m.mib = test::temp_path(suffix);
  sample::write_sample_mib(m.mib, s, {});
  m.plain = io::load(m.mib, opts("cpu")).read();
  m.det_rows = s.det_rows, m.det_cols = s.det_cols;
  return m;
}

}  // namespace

TEST(GivenPixelMask, NpyMaskZeroesExactlyThosePixelsOfAMerlinFile) {
  const MerlinCase m = merlin_case("m.mib");
  std::vector<std::uint16_t> mask(m.det_rows * m.det_cols, 0);
  const std::vector<std::uint32_t> bad = {0, 13, 8 * 12 + 6, 16 * 12 - 1};
  for (std::uint32_t px : bad) mask[px] = 300;  // nonzero in the high byte only for some: 300 = 0x012c
  mask[13] = 256;
  const std::string mp = test::temp_path("mask.npy");
  io::write_npy(mp, "<u2", {m.det_rows, m.det_cols}, mask.data(), mask.size() * 2);
  io::LoadOptions o = opts("cpu");
  o.pixel_mask_file = mp;
  const Dataset ds = io::load(m.mib, o);
  const HostArray4D got = ds.read();
  std::vector<std::uint32_t> want = as_u32(m.plain);
  const std::size_t fp = m.det_rows * m.det_cols;
  std::size_t nonzero_before = 0;
  for (std::size_t f = 0; f < 12; ++f)
    for (std::uint32_t px : bad) nonzero_before += want[f * fp + px] != 0, want[f * fp + px] = 0;
  EXPECT_GT(nonzero_before, 0u);  // the mask changes something
  EXPECT_EQ(as_u32(got), want);
  const auto& pv = ds.provenance().parameters;
  EXPECT_EQ(pv.at("pixel_mask"), "given");
  EXPECT_EQ(pv.at("pixel_mask_source"), mp);
  EXPECT_EQ(pv.at("bad_pixels_zeroed"), 4);
  // Fortran-order bool mask and a text list: the same pixels.
  std::string fb;
  for (std::size_t c = 0; c < m.det_cols; ++c)
    for (std::size_t r = 0; r < m.det_rows; ++r) fb += char(mask[r * m.det_cols + c] != 0);
  const std::string fmask = test::temp_path("fmask.npy");
  std::ofstream(fmask, std::ios::binary) << io::npy_header("|b1", {m.det_rows, m.det_cols}, true) << fb;
  o.pixel_mask_file = fmask;
  EXPECT_EQ(as_u32(io::load(m.mib, o).read()), want);
  const std::string txt = test::temp_path("mask.txt");
  std::ofstream(txt) << "15 11\n0 0\n1 1\n8 6\n";
  o.pixel_mask_file = txt;
  EXPECT_EQ(as_u32(io::load(m.mib, o).read()), want);
  // Given in memory (as from Python), with "zero" asked: the given mask is used.
  io::LoadOptions a = opts("cpu");
  a.pixel_mask = "zero";
  a.pixel_mask_given.source = "python array";
  a.pixel_mask_given.shape = {m.det_rows, m.det_cols};
  a.pixel_mask_given.bad.assign(fp, 0);
  for (std::uint32_t px : bad) a.pixel_mask_given.bad[px] = 1;
  const Dataset ga = io::load(m.mib, a);
  EXPECT_EQ(as_u32(ga.read()), want);
  EXPECT_EQ(ga.provenance().parameters.at("pixel_mask_source"), "python array");
  // Binned: masked before binning.
  io::LoadOptions b = opts("cpu");
  b.pixel_mask_file = mp;
  b.bin_detector = 2;
  const std::vector<std::uint32_t> binned = as_u32(io::load(m.mib, b).read());
  for (std::size_t f = 0; f < 12; ++f)
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t c = 0; c < 6; ++c) {
        std::uint32_t sum = 0;
        for (std::size_t y = 0; y < 2; ++y)
          for (std::size_t x = 0; x < 2; ++x) sum += want[f * fp + (2 * r + y) * m.det_cols + 2 * c + x];
        ASSERT_EQ(binned[(f * 8 + r) * 6 + c], sum);
      }
}

TEST(GivenPixelMask, BadMasksAreRefusedNamingTheProblem) {
  const MerlinCase m = merlin_case("m.mib");
  io::LoadOptions o = opts("cpu");
  std::vector<std::uint8_t> wrong(12 * 16, 1);
  const std::string wp = test::temp_path("wrong.npy");
  io::write_npy(wp, "|u1", {12, 16}, wrong.data(), wrong.size());
  o.pixel_mask_file = wp;
  test::expect_error<InvalidArgument>([&] { io::load(m.mib, o); }, {wp, "(12, 16)", "16 x 12", m.mib});
  const std::string fp = test::temp_path("float.npy");
  std::vector<float> fl(16 * 12, 0.f);
  io::write_npy(fp, "<f4", {16, 12}, fl.data(), fl.size() * 4);
  o.pixel_mask_file = fp;
  test::expect_error<DTypeError>([&] { io::load(m.mib, o); }, {fp, "<f4", "integers or booleans"});
  o.pixel_mask_file = test::temp_path("missing.npy");
  test::expect_error<IoError>([&] { io::load(m.mib, o); }, {"missing.npy"});
  const std::string tp = test::temp_path("bad.txt");
  std::ofstream(tp) << "1 2\nthree 4\n";
  o.pixel_mask_file = tp;
  test::expect_error<FormatError>([&] { io::load(m.mib, o); }, {tp, "line 2", "row col"});
  std::ofstream(tp) << "1 2\n16 0\n";
  test::expect_error<InvalidArgument>([&] { io::load(m.mib, o); }, {tp, "(16, 0)", "outside", "16 x 12"});
  // "zero" on a file without a mask points to the given mask.
  io::LoadOptions z = opts("cpu");
  z.pixel_mask = "zero";
  test::expect_error<IoError>([&] { io::load(m.mib, z); }, {"no pixel mask", "merlin", "--pixel-mask-file"});
}

// ---- GPU (skipped without one) ----

TEST(FortranNpyCuda, ScatterKernelEqualsTheHostScatter) {
  QGPU_REQUIRE_CUDA();
  const std::vector<std::size_t> shape = {6, 5, 7, 9};
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool big : {false, true})
      for (int kk = 0; kk < 6; ++kk) {  // cases 3..5: the detector column fastest (old-layout DM)
        const int k = kk % 3;
        const auto v = values(6 * 5 * 7 * 9, t, 0x03ffffff);
        const std::string f = write_npy("f.npy", v, shape, t, big, true);
        io::LoadOptions o = opts("cpu");
        if (k == 1) o.scan_region = {1, 0, 4, 5}, o.detector_region = {1, 2, 6, 6}, o.bin_detector = 3;
        if (k == 2) o.detector_region = {2, 1, 3, 8};
        io::LoadPlan p = io::plan_load(f, o);
        if (k == 1) p.bad_pixels = {0, 10, 62}, p.zero_bad_pixels = true;
        io::TransposedGeometry g = io::transposed_geometry(p);
        g.det_rows_fastest = kk < 3;
        std::vector<std::uint8_t> file(p.info.frames * p.info.frame_bytes());
        std::ifstream(f, std::ios::binary).seekg(std::streamoff(p.info.transposed.offset))
            .read(reinterpret_cast<char*>(file.data()), std::streamsize(file.size()));
        const std::uint64_t es = dtype_size(t), first = 11, count = file.size() / es - 20;  // a slab mid-file
        const std::vector<std::uint8_t> bad = io::transposed_bad_mask(p);
        const std::size_t out_bytes = p.out_shape.nbytes(dtype_size(p.out_dtype));
        std::vector<std::uint8_t> host(out_bytes, 0), dev_out(out_bytes, 0xee);
        ASSERT_TRUE(io::scatter_transposed_host(file.data() + first * es, first, count, g, t, p.binned(), host.data(),
                                                bad.empty() ? nullptr : bad.data(), 2));
        DeviceBuffer d_slab(count * es), d_out(out_bytes), d_bad(bad.size()), d_flag(sizeof(int));
        d_slab.upload(file.data() + first * es, count * es);
        std::vector<std::uint8_t> init(out_bytes, 0);
        d_out.upload(init.data(), out_bytes);
        if (!bad.empty()) d_bad.upload(bad.data(), bad.size());
        const int zero = 0;
        d_flag.upload(&zero, sizeof(zero));
        io::cuda::scatter_transposed(d_slab.as<std::uint8_t>(), first, count, g, t, p.binned(), d_out.data(),
                                     bad.empty() ? nullptr : d_bad.as<std::uint8_t>(), d_flag.as<int>(), nullptr);
        d_out.download(dev_out.data(), out_bytes);
        int flag = 1;
        d_flag.download(&flag, sizeof(flag));
        EXPECT_EQ(flag, 0);
        EXPECT_EQ(dev_out, host) << dtype_name(t) << " big " << big << " case " << kk;
      }
}

TEST(FortranNpyCuda, LoadsEqualTheCpu) {
  QGPU_REQUIRE_CUDA();
  const std::vector<std::size_t> shape = {6, 8, 10, 12};
  for (DType t : {DType::u8, DType::u16, DType::u32})
    for (bool big : {false, true}) {
      const auto v = values(6 * 8 * 10 * 12, t, 0x03ffffff);
      const std::string f = write_npy("f.npy", v, shape, t, big, true);
      const std::string f3 = write_npy("f3.npy", v, {48, 10, 12}, t, big, true);
      const std::string mask = test::temp_path("mask.txt");
      std::ofstream(mask) << "0 0\n3 4\n9 11\n";
      for (int k = 0; k < 6; ++k) {
        io::LoadOptions o = opts("cpu");
        if (k == 1) o.scan_region = {1, 2, 4, 6}, o.detector_region = {2, 1, 6, 9};
        if (k == 2) o.bin_scan = 2, o.bin_detector = 2;
        if (k == 3) o.pixel_mask_file = mask, o.batch_bytes = 1000;
        if (k == 4) o.pixel_mask_file = mask, o.bin_detector = 2, o.representation = "encoded";
        if (k == 5) o.scan_rows = 6, o.scan_cols = 8;
        const std::string& path = k == 5 ? f3 : f;
        const std::vector<std::uint32_t> cpu = as_u32(load_host(path, o));
        o.backend = "cuda";
        const Dataset gpu = io::load(path, o);
        EXPECT_EQ(gpu.backend(), Backend::cuda);
        EXPECT_EQ(as_u32(gpu.read()), cpu) << dtype_name(t) << " big " << big << " case " << k;
      }
      EXPECT_EQ(as_u32(io::load(f, opts("cuda")).read()), v);
    }
}

TEST(GivenPixelMaskCuda, MerlinMaskOnTheGpuEqualsTheCpu) {
  QGPU_REQUIRE_CUDA();
  const MerlinCase m = merlin_case("m.mib");
  const std::string txt = test::temp_path("mask.txt");
  std::ofstream(txt) << "15 11\n0 0\n1 1\n8 6\n";
  for (int k = 0; k < 3; ++k) {
    io::LoadOptions o = opts("cpu");
    o.pixel_mask_file = txt;
    if (k == 1) o.bin_detector = 2, o.scan_region = {1, 0, 2, 4};
    if (k == 2) o.representation = "encoded";
    const std::vector<std::uint32_t> cpu = as_u32(load_host(m.mib, o));
    o.backend = "cuda";
    const Dataset gpu = io::load(m.mib, o);
    EXPECT_EQ(as_u32(gpu.read()), cpu) << k;
    EXPECT_EQ(gpu.provenance().parameters.at("bad_pixels_zeroed"), 4);
  }
}
