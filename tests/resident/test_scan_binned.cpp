// The scan-binned copy (resident/binned/scan_binned.hpp): built while frames are appended in batches of any size,
// its frames are the b x b block sums of the scan computed here independently (a plain loop over the dense
// counts), and the virtual images and CoM asked at a scan bin that b divides come from it with the same integers /
// float bits as the full-resolution answer binned (the dense CPU reference). A sum beyond uint32 drops it with a
// reason (an error when required). The CUDA tests (skipped without a GPU) build it on the GPU, through the
// kernel's vector and scalar paths, and compare with the CPU reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "detector/mask.hpp"
#include "detector/virtual_detector.hpp"
#include "device/cuda/device_buffer.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/load.hpp"
#include "io/sample/sample.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "resident/scan_bin.hpp"
#include "support/cuda_required.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

// rows x cols scan of dr x dc frames of dtype T, random counts below `top` (a few zeros-heavy pixels as in data).
template <class T>
HostArray4D random_counts(std::size_t rows, std::size_t cols, std::size_t dr, std::size_t dc, std::uint64_t top,
                          unsigned seed) {
  HostArray4D a;
  a.shape = {rows, cols, dr, dc};
  a.dtype = sizeof(T) == 1 ? DType::u8 : sizeof(T) == 2 ? DType::u16 : DType::u32;
  std::vector<T> v(rows * cols * dr * dc);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = (rng() % 3 == 0) ? T(rng() % top) : T(0);
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

// The block sums of a host dataset's frames, straight from the definition: uint64 per binned frame and pixel.
std::vector<std::uint64_t> block_sums(const HostArray4D& a, std::size_t b) {
  const Shape4D& s = a.shape;
  const std::size_t P = s.det_rows * s.det_cols, oc = s.scan_cols / b;
  std::vector<std::uint64_t> out((s.scan_rows / b) * oc * P, 0);
  for (std::size_t r = 0; r < s.scan_rows; ++r)
    for (std::size_t c = 0; c < s.scan_cols; ++c)
      for (std::size_t p = 0; p < P; ++p) {
        const std::size_t i = (r * s.scan_cols + c) * P + p;
        std::uint64_t v = 0;
        if (a.dtype == DType::u8) v = a.bytes[i];
        else if (a.dtype == DType::u16) v = reinterpret_cast<const std::uint16_t*>(a.bytes.data())[i];
        else v = reinterpret_cast<const std::uint32_t*>(a.bytes.data())[i];
        out[((r / b) * oc + c / b) * P + p] += v;
      }
  return out;
}

std::vector<std::uint64_t> as_u64(const HostArray4D& a) {
  EXPECT_EQ(a.dtype, DType::u32);
  std::vector<std::uint64_t> v(a.bytes.size() / 4);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = reinterpret_cast<const std::uint32_t*>(a.bytes.data())[i];
  return v;
}

// An encoded resident of `a` on `backend` with a copy at bin b, appended in batches of `batch` frames (cuda: each
// batch uploaded from an offset of one device buffer, so odd batches start at unaligned addresses).
Dataset encode_in_batches(const HostArray4D& a, Backend backend, std::size_t b, std::size_t batch,
                          std::uint32_t tile, bool required = true) {
  auto enc = std::make_shared<EncodedResident>(a.shape, a.dtype, backend, tile);
  enc->request_scan_binned({b, required});
  const std::size_t fb = a.shape.frame_pixels() * dtype_size(a.dtype), frames = a.shape.frames();
  std::unique_ptr<DeviceBuffer> d;
  if (backend == Backend::cuda) {
    d = std::make_unique<DeviceBuffer>(a.bytes.size());
    d->upload(a.bytes.data(), a.bytes.size());
  }
  for (std::size_t f = 0; f < frames; f += batch) {
    const std::size_t n = std::min(batch, frames - f);
    const void* src = backend == Backend::cuda ? static_cast<const void*>(d->as<std::uint8_t>() + f * fb)
                                               : static_cast<const void*>(a.bytes.data() + f * fb);
    enc->append(src, n);
  }
  return Dataset::from_encoded(enc, {}, {});
}

std::string strategy_of(const SumImage& img) { return img.provenance().parameters.value("strategy", ""); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The copy's frames against the definition, and every query it serves against the dense CPU reference `ref`.
void expect_copy_answers(const Dataset& e, const Dataset& ref, const HostArray4D& a, std::size_t b) {
  const auto copy = e.encoded()->scan_binned(b);
  ASSERT_NE(copy, nullptr) << e.encoded()->scan_binned_report().dump();
  EXPECT_EQ(copy->shape().scan_rows, a.shape.scan_rows / b);
  EXPECT_EQ(copy->dtype(), DType::u32);
  EXPECT_EQ(as_u64(copy->read()), block_sums(a, b));
  EXPECT_NE(e.encoded()->scan_binned(2 * b), nullptr);  // any multiple of its bin (the query checks the scan)
  if (b > 1) EXPECT_EQ(e.encoded()->scan_binned(b + 1), nullptr);
  const Shape4D& s = a.shape;
  // an off-centre disk, an annulus, a ring around a corner: none a union of shells around any one centre
  const std::vector<detector::Mask> masks = {
      detector::disk(s.det_rows, s.det_cols, 1.3, double(s.det_cols) - 2.2, 2.5),
      detector::annulus(s.det_rows, s.det_cols, 2.0, 1.0, 1.5, 4.0),
      detector::disk(s.det_rows, s.det_cols, double(s.det_rows) / 2, double(s.det_cols) / 2, 100)};
  for (std::size_t bin : {b, 2 * b}) {
    if (s.scan_rows % bin || s.scan_cols % bin) continue;
    for (const auto& m : masks) {
      const SumImage got = detector::virtual_image(e, m, bin);
      EXPECT_EQ(got.counts("copy").data, detector::virtual_image(ref, m, bin).counts("ref").data) << bin;
      EXPECT_NE(strategy_of(got).find("scan-binned copy"), std::string::npos) << strategy_of(got);
      EXPECT_EQ(got.provenance().parameters["scan_binned_copy"], b);
      dpc::ComOptions o;
      o.scan_bin = bin;
      o.mask = {m.weights.begin(), m.weights.end()};
      const dpc::ComResult c = dpc::center_of_mass(e, o), cr = dpc::center_of_mass(ref, o);
      EXPECT_TRUE(same_bits(c.com_row.data, cr.com_row.data)) << bin;
      EXPECT_TRUE(same_bits(c.com_col.data, cr.com_col.data)) << bin;
      EXPECT_EQ(c.provenance.parameters["scan_binned_copy"], b);
      const std::string cs = c.provenance.parameters.value("strategy", "");
      EXPECT_TRUE(cs == "encoded masked sums on the scan-binned copy" ||
                  cs == "encoded totals minus complement on the scan-binned copy")
          << cs;
    }
    dpc::ComOptions whole;  // no mask: the copy's frame totals for S
    whole.scan_bin = bin;
    const dpc::ComResult c = dpc::center_of_mass(e, whole), cr = dpc::center_of_mass(ref, whole);
    EXPECT_TRUE(same_bits(c.com_row.data, cr.com_row.data));
    EXPECT_TRUE(same_bits(c.com_col.data, cr.com_col.data));
    EXPECT_EQ(c.provenance.parameters.value("strategy", ""), "encoded totals on the scan-binned copy");
  }
  // a scan bin the copy's does not divide, and full resolution: the decode path
  const SumImage full = detector::virtual_image(e, masks[0]);
  EXPECT_EQ(strategy_of(full).find("scan-binned copy"), std::string::npos);
  EXPECT_EQ(full.counts("full").data, detector::virtual_image(ref, masks[0]).counts("ref").data);
}

// A written sample of rows x cols positions and dr x dc frames.
std::string sample_file(const char* name, std::size_t rows, std::size_t cols, std::size_t dr, std::size_t dc) {
  sample::SampleSpec s;
  s.scan_rows = rows;
  s.scan_cols = cols;
  s.det_rows = dr;
  s.det_cols = dc;
  s.threads = 2;
  const std::string path = test::temp_path(name);
  sample::write_sample(path, s);
  return path;
}

io::LoadOptions encoded_with_copy(const char* backend, const char* bin) {
  io::LoadOptions o;
  o.backend = backend;
  o.representation = "encoded";
  o.scan_binned = bin;
  return o;
}

}  // namespace

TEST(ScanBinned, CpuCopyInOddBatchesEqualsTheBlockSumsAndAnswersLikeTheReference) {
  const HostArray4D a = random_counts<std::uint16_t>(12, 8, 6, 10, 60000, 1);
  const Dataset ref = Dataset::from_host(HostArray4D(a), {}, {});
  for (std::size_t b : {2, 4})
    for (std::size_t batch : {std::size_t(1), std::size_t(7), std::size_t(17), std::size_t(96)}) {
      SCOPED_TRACE("bin " + std::to_string(b) + ", batches of " + std::to_string(batch));
      expect_copy_answers(encode_in_batches(a, Backend::cpu, b, batch, 16), ref, a, b);
    }
}

TEST(ScanBinned, AllDtypesAndReport) {
  const HostArray4D a8 = random_counts<std::uint8_t>(6, 6, 5, 7, 256, 2);
  const HostArray4D a32 = random_counts<std::uint32_t>(6, 6, 5, 7, 1u << 20, 3);
  for (const HostArray4D* a : {&a8, &a32}) {
    const Dataset e = encode_in_batches(*a, Backend::cpu, 3, 5, 8);
    EXPECT_EQ(as_u64(e.encoded()->scan_binned(3)->read()), block_sums(*a, 3));
    const nlohmann::json r = describe(e)["scan_binned"];
    EXPECT_EQ(r["bin"], 3);
    EXPECT_EQ(r["built"], true);
    EXPECT_EQ(r["shape"], nlohmann::json({2, 2, 5, 7}));
    EXPECT_GT(r["resident_bytes"].get<std::size_t>(), 0u);
  }
}

TEST(ScanBinned, ASumBeyondUint32DropsTheCopyWithAReasonOrFailsWhenRequired) {
  HostArray4D a;
  a.shape = {2, 2, 2, 2};
  a.dtype = DType::u32;
  std::vector<std::uint32_t> v(16, 0);
  v[1] = 0xF0000000u;   // frame 0, pixel 1
  v[13] = 0x20000000u;  // frame 3, pixel 1: the 2x2 block sum passes 2^32
  a.bytes.resize(64);
  std::memcpy(a.bytes.data(), v.data(), 64);
  const Dataset e = encode_in_batches(a, Backend::cpu, 2, 3, 4, false);
  EXPECT_EQ(e.encoded()->scan_binned(2), nullptr);
  const nlohmann::json r = e.encoded()->scan_binned_report();
  EXPECT_EQ(r["built"], false);
  EXPECT_NE(r["reason"].get<std::string>().find("exceeds uint32"), std::string::npos) << r.dump();
  // the binned query still answers (the decode path), with the exact sum beyond uint32
  const detector::Mask all = detector::disk(2, 2, 0.5, 0.5, 5);
  EXPECT_EQ(detector::virtual_image(e, all, 2).counts("t").data[0], 0xF0000000ull + 0x20000000ull);
  EXPECT_THROW(encode_in_batches(a, Backend::cpu, 2, 3, 4, true), Error);
  // a bin that does not divide the scan: refused when required, reported when not
  EXPECT_THROW(encode_in_batches(a, Backend::cpu, 3, 1, 4, true), InvalidArgument);
  EXPECT_EQ(encode_in_batches(a, Backend::cpu, 3, 1, 4, false).encoded()->scan_binned_report()["built"], false);
}

TEST(ScanBinned, TheSelfCheckDropsACopyThatDisagreesWithTheResident) {
  // The builder alone, checked against the full data's own per-pixel and per-frame totals (what the resident's
  // encoder counts): equal totals pass, a one-count difference in either drops the copy with the reason.
  const HostArray4D a = random_counts<std::uint16_t>(4, 6, 3, 4, 1000, 9);
  const Shape4D& s = a.shape;
  const std::size_t P = s.frame_pixels();
  std::vector<std::uint64_t> pattern(P, 0), totals(s.frames(), 0);
  for (std::size_t f = 0; f < s.frames(); ++f)
    for (std::size_t p = 0; p < P; ++p) {
      const std::uint64_t v = reinterpret_cast<const std::uint16_t*>(a.bytes.data())[f * P + p];
      pattern[p] += v;
      totals[f] += v;
    }
  const auto built = [&] {
    auto b = std::make_unique<ScanBinnedBuilder>(s, DType::u16, Backend::cpu, 2, encoded::Policy::fast);
    b->add(a.bytes.data(), 0, 5, nullptr);
    b->add(a.bytes.data() + 5 * P * 2, 5, s.frames() - 5, nullptr);
    EXPECT_TRUE(b->finish());
    return b;
  };
  auto ok = built();
  EXPECT_TRUE(ok->verify(pattern, totals));
  EXPECT_NE(ok->resident(), nullptr);
  auto bad_pattern = pattern;
  bad_pattern[5] += 1;
  auto b1 = built();
  EXPECT_FALSE(b1->verify(bad_pattern, totals));
  EXPECT_EQ(b1->resident(), nullptr);
  EXPECT_EQ(b1->reason(), "self-check failed: its per-pixel totals differ from the resident's");
  auto bad_totals = totals;
  bad_totals[7] += 1;
  auto b2 = built();
  EXPECT_FALSE(b2->verify(pattern, bad_totals));
  EXPECT_EQ(b2->reason(), "self-check failed: its frame totals differ from the resident's binned");
  EXPECT_EQ(b2->describe()["built"], false);
}

// The same self-check on the GPU against a complete full resident (its frame totals binned and compared on the
// device): the resident of the same counts passes, one whose frame 7 holds one more count drops the copy.
TEST(ScanBinnedCuda, TheDeviceSelfCheckDropsACopyThatDisagreesWithTheResident) {
  QGPU_REQUIRE_CUDA();
  const HostArray4D a = random_counts<std::uint16_t>(4, 6, 3, 4, 1000, 9);
  const Shape4D& s = a.shape;
  const std::size_t P = s.frame_pixels();
  std::vector<std::uint64_t> pattern(P, 0);
  for (std::size_t f = 0; f < s.frames(); ++f)
    for (std::size_t p = 0; p < P; ++p) pattern[p] += reinterpret_cast<const std::uint16_t*>(a.bytes.data())[f * P + p];
  const auto on_device = [](const auto& bytes) {
    auto d = std::make_unique<DeviceBuffer>(bytes.size());
    d->upload(bytes.data(), bytes.size());
    return d;
  };
  const auto frames = on_device(a.bytes);
  const auto built = [&] {
    auto b = std::make_unique<ScanBinnedBuilder>(s, DType::u16, Backend::cuda, 2, encoded::Policy::fast);
    b->add(frames->data(), 0, 5, nullptr);
    b->add(frames->as<std::uint8_t>() + 5 * P * 2, 5, s.frames() - 5, nullptr);
    EXPECT_TRUE(b->finish());
    return b;
  };
  const auto resident_of = [&](const auto& bytes) {
    const auto d = on_device(bytes);
    auto e = std::make_unique<EncodedResident>(s, DType::u16, Backend::cuda, 16);
    e->append(d->data(), s.frames());
    return e;
  };
  auto ok = built();
  EXPECT_TRUE(ok->verify(pattern, *resident_of(a.bytes)));
  EXPECT_NE(ok->resident(), nullptr);
  auto changed = a.bytes;
  reinterpret_cast<std::uint16_t*>(changed.data())[7 * P] += 1;
  auto bad = built();
  EXPECT_FALSE(bad->verify(pattern, *resident_of(changed)));
  EXPECT_EQ(bad->resident(), nullptr);
  EXPECT_EQ(bad->reason(), "self-check failed: its frame totals differ from the resident's binned");
}

TEST(ScanBinned, DisplayBinFollowsTheViewersRule) {
  EXPECT_EQ(display_scan_bin(512, 512), 1u);
  EXPECT_EQ(display_scan_bin(1024, 1024), 1u);
  EXPECT_EQ(display_scan_bin(2048, 2048), 2u);
  EXPECT_EQ(display_scan_bin(4096, 4096), 4u);
  EXPECT_EQ(display_scan_bin(4096, 1024), 4u);
  EXPECT_EQ(display_scan_bin(3000, 1500), 3u);   // 2 does not reach 1024, 3 does
  EXPECT_EQ(display_scan_bin(1031, 1031), 1u);   // prime: no bin
  EXPECT_EQ(display_scan_bin(2054, 2054), 1u);   // 2 leaves 1027 > 1024; 2054 = 2 x 13 x 79: 13 leaves 158 < 256
}

TEST(ScanBinned, LoadOptionsResolveAndReport) {
  const std::string path = sample_file("scan_binned_sample.h5", 8, 12, 16, 20);
  io::LoadOptions o = encoded_with_copy("cpu", "4");
  const Dataset e = io::load(path, o);
  EXPECT_EQ(e.provenance().parameters["admission"]["scan_binned"]["decision"], "on");
  EXPECT_EQ(describe(e)["scan_binned"]["built"], true);
  const Dataset ref = io::load(path, [&] { auto d = o; d.representation = "dense"; d.scan_binned = "off"; return d; }());
  const detector::Mask m = detector::disk(16, 20, 4, 15, 3);
  const SumImage got = detector::virtual_image(e, m, 4);
  EXPECT_EQ(got.counts("e").data, detector::virtual_image(ref, m, 4).counts("r").data);
  EXPECT_NE(strategy_of(got).find("scan-binned copy"), std::string::npos);
  o.scan_binned = "auto";  // a small scan is displayed unbinned: no copy
  const Dataset a = io::load(path, o);
  EXPECT_TRUE(describe(a)["scan_binned"].is_null());
  EXPECT_NE(a.provenance().parameters["admission"]["scan_binned"]["decision"].get<std::string>().find("off"),
            std::string::npos);
  for (const char* bad : {"1", "x", "-2", "2.5", ""}) {
    o.scan_binned = bad;
    EXPECT_THROW(io::load(path, o), InvalidArgument) << bad;
  }
  o.scan_binned = "5";  // does not divide 8 x 12
  EXPECT_THROW(io::load(path, o), InvalidArgument);
  o.scan_binned = "2";
  o.representation = "dense";
  EXPECT_THROW(io::load(path, o), InvalidArgument);
}

TEST(ScanBinnedCuda, GpuCopyEqualsTheCpuCopyAndAnswersLikeTheReference) {
  QGPU_REQUIRE_CUDA();
  const HostArray4D a = random_counts<std::uint16_t>(16, 12, 8, 12, 60000, 4);  // 96 pixels: the vector path
  const Dataset ref = Dataset::from_host(HostArray4D(a), {}, {});
  for (std::size_t b : {2, 4})
    for (std::size_t batch : {std::size_t(5), std::size_t(40), std::size_t(192)}) {
      SCOPED_TRACE("bin " + std::to_string(b) + ", batches of " + std::to_string(batch));
      expect_copy_answers(encode_in_batches(a, Backend::cuda, b, batch, 32), ref, a, b);
    }
}

TEST(ScanBinnedCuda, ScalarPathAndEveryDtypeAndOverflow) {
  QGPU_REQUIRE_CUDA();
  const HostArray4D a8 = random_counts<std::uint8_t>(6, 9, 5, 7, 256, 5);       // 35 pixels: the scalar path
  const HostArray4D a16 = random_counts<std::uint16_t>(6, 9, 4, 4, 65536, 6);   // 16 pixels, batches of 7 frames:
  const HostArray4D a32 = random_counts<std::uint32_t>(6, 9, 4, 8, 1u << 24, 7);  // unaligned starts -> scalar
  for (const HostArray4D* a : {&a8, &a16, &a32}) {
    const Dataset e = encode_in_batches(*a, Backend::cuda, 3, 7, 8);
    ASSERT_NE(e.encoded()->scan_binned(3), nullptr);
    EXPECT_EQ(as_u64(e.encoded()->scan_binned(3)->read()), block_sums(*a, 3));
  }
  HostArray4D big = random_counts<std::uint32_t>(2, 2, 4, 4, 1, 8);
  reinterpret_cast<std::uint32_t*>(big.bytes.data())[5] = 0xF0000000u;
  reinterpret_cast<std::uint32_t*>(big.bytes.data())[16 * 3 + 5] = 0x20000000u;
  const Dataset e = encode_in_batches(big, Backend::cuda, 2, 1, 4, false);
  EXPECT_EQ(e.encoded()->scan_binned(2), nullptr);
  EXPECT_NE(e.encoded()->scan_binned_report()["reason"].get<std::string>().find("exceeds uint32"), std::string::npos);
  EXPECT_THROW(encode_in_batches(big, Backend::cuda, 2, 1, 4, true), Error);
}

TEST(ScanBinnedCuda, CudaLoadBuildsTheCopyInItsPass) {
  QGPU_REQUIRE_CUDA();
  const std::string path = sample_file("scan_binned_cuda_sample.h5", 24, 32, 48, 40);
  io::LoadOptions o = encoded_with_copy("cuda", "4");
  o.batch_bytes = 20000;  // batches of a few frames: copy rows split across batches
  const Dataset e = io::load(path, o);
  io::LoadOptions c = o;
  c.backend = "cpu";
  c.representation = "dense";
  c.scan_binned = "off";
  const Dataset ref = io::load(path, c);
  ASSERT_NE(e.encoded()->scan_binned(4), nullptr) << describe(e)["scan_binned"].dump();
  for (const auto& m : {detector::disk(48, 40, 10, 30, 6), detector::annulus(48, 40, 30, 8, 3, 9)}) {
    EXPECT_EQ(detector::virtual_image(e, m, 4).counts("e").data, detector::virtual_image(ref, m, 4).counts("r").data);
    dpc::ComOptions co;
    co.scan_bin = 8;
    co.mask = {m.weights.begin(), m.weights.end()};
    EXPECT_TRUE(same_bits(dpc::center_of_mass(e, co).com_row.data, dpc::center_of_mass(ref, co).com_row.data));
  }
}
