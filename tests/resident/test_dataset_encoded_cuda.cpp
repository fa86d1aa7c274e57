// The encoded representation on the cuda backend: a sample loaded encoded on the GPU (the CUDA loader appending
// its decoded batches) answers every query like the GPU dense dataset and the CPU reference, exactly (integers)
// and bit for bit (CoM, mean pattern). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/load.hpp"
#include "remote/frame_window.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "ssb/ssb.hpp"
#include "support/cuda_required.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

sample::SampleSpec spec() {
  sample::SampleSpec s;
  s.scan_rows = 24;
  s.scan_cols = 40;
  s.det_rows = 20;
  s.det_cols = 24;
  s.threads = 2;
  return s;
}

io::LoadOptions opts(const std::string& backend, const std::string& representation) {
  io::LoadOptions o;
  o.backend = backend;
  o.representation = representation;
  return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(DatasetEncodedCuda, EveryQueryMatchesDenseAndTheCpuReference) {
  QGPU_REQUIRE_CUDA();
  const std::string path = test::temp_path("sample.h5");
  sample::write_sample(path, spec());
  const Dataset ref = io::load(path, opts("cpu", "dense"));
  const Dataset gd = io::load(path, opts("cuda", "dense"));
  const Dataset ge = io::load(path, opts("cuda", "encoded"));
  ASSERT_EQ(ge.representation(), "encoded");
  ASSERT_EQ(ge.backend(), Backend::cuda);
  EXPECT_LT(ge.resident_bytes(), ge.dense_bytes());
  EXPECT_EQ(ge.read().bytes, ref.read().bytes);
  EXPECT_EQ(ge.read({3, 5, 7, 11}, {2, 4, 9, 13}).bytes, ref.read({3, 5, 7, 11}, {2, 4, 9, 13}).bytes);
  for (const Dataset* d : {&gd, &ge}) {
    EXPECT_EQ(detector::bf(*d).counts("test").data, detector::bf(ref).counts("test").data) << d->representation();
    EXPECT_EQ(detector::adf(*d, 4, 9).counts("test").data, detector::adf(ref, 4, 9).counts("test").data) << d->representation();
    EXPECT_EQ(detector::sum_pattern(*d).counts("test").data, detector::sum_pattern(ref).counts("test").data) << d->representation();
    EXPECT_EQ(detector::max_pattern(*d).counts("test").data, detector::max_pattern(ref).counts("test").data) << d->representation();
    EXPECT_TRUE(same_bits(detector::mean_pattern(*d).data, detector::mean_pattern(ref).data)) << d->representation();
    std::vector<std::uint32_t> uniform(20 * 24, 3), weighted(20 * 24, 0);
    for (std::size_t i = 0; i < uniform.size(); i += 7) uniform[i] = 0;
    for (std::size_t i = 0; i < weighted.size(); ++i) weighted[i] = i % 3 ? std::uint32_t(500 + i) : 0;
    for (const auto& w : {uniform, weighted}) {
      const detector::Mask m = detector::from_weights(20, 24, w);
      EXPECT_EQ(detector::virtual_image(*d, m).counts("test").data, detector::virtual_image(ref, m).counts("test").data) << d->representation();
    }
    const dpc::ComResult a = dpc::center_of_mass(*d), b = dpc::center_of_mass(ref);
    EXPECT_TRUE(same_bits(a.com_row.data, b.com_row.data)) << d->representation();
    EXPECT_TRUE(same_bits(a.com_col.data, b.com_col.data)) << d->representation();
    EXPECT_EQ(remote::read_frame_values(*d, 13, 37).counts("test").data, remote::read_frame_values(ref, 13, 37).counts("test").data);
  }
  // SSB on the GPU: the encoded gather feeds the same float32 pipeline as the dense one.
  const ssb::SsbParams p = ssb::params_from_metadata(ref);
  EXPECT_TRUE(same_bits(ssb::reconstruct(ge, p).phase.data, ssb::reconstruct(gd, p).phase.data));
  // Copies keep the representation and the counts.
  const Dataset host = ge.to_host();
  EXPECT_EQ(host.representation(), "encoded");
  EXPECT_EQ(host.backend(), Backend::cpu);
  EXPECT_EQ(host.read().bytes, ref.read().bytes);
  EXPECT_EQ(ref.to_encoded().to_device().read().bytes, ref.read().bytes);
}

TEST(DatasetEncodedCuda, CropAndBinningMatchTheCpuReference) {
  QGPU_REQUIRE_CUDA();
  const std::string path = test::temp_path("crop.h5");
  sample::write_sample(path, spec());
  for (std::size_t bin : {1, 2}) {
    io::LoadOptions c = opts("cpu", "dense"), g = opts("cuda", "encoded");
    for (io::LoadOptions* o : {&c, &g}) {
      o->scan_region = {2, 4, 20, 32};
      o->detector_region = {2, 2, 16, 20};
      o->bin_scan = bin;
      o->bin_detector = bin;
      o->staging_bytes = 1;
    }
    EXPECT_EQ(io::load(path, g).read().bytes, io::load(path, c).read().bytes) << "bin " << bin;
  }
}

// The encoder runs on its own thread and stream while the next batch is read and decoded (two alternating input
// buffers): loads of many small batches, whole frames passed through and binned rows, equal the CPU reference.
TEST(DatasetEncodedCuda, OverlappedEncoderOverManyBatches) {
  QGPU_REQUIRE_CUDA();
  const std::string path = test::temp_path("batches.h5");
  sample::write_sample(path, spec());
  const Dataset ref = io::load(path, opts("cpu", "dense"));
  for (std::size_t bin : {1, 2}) {
    for (std::size_t batch : {std::size_t{1}, std::size_t{3000}}) {
      SCOPED_TRACE("bin " + std::to_string(bin) + ", batch bytes " + std::to_string(batch));
      io::LoadOptions g = opts("cuda", "encoded");
      g.batch_bytes = batch;  // 1: one scan row per batch (24 batches, the tile of 512 frames spans several)
      g.staging_bytes = batch;
      g.bin_detector = bin;
      io::LoadOptions c = opts("cpu", "dense");
      c.bin_detector = bin;
      const Dataset ge = io::load(path, g);
      const Dataset rc = bin == 1 ? ref : io::load(path, c);
      ASSERT_EQ(ge.representation(), "encoded");
      EXPECT_EQ(ge.read().bytes, rc.read().bytes);
      EXPECT_EQ(detector::sum_pattern(ge).counts("test").data, detector::sum_pattern(rc).counts("test").data);
      // A given disk: binned by 2 the sample's disk (radius det/6 = 3.3 px) is too small for the fit to find.
      const double r = 3.0 / double(bin);
      const detector::Center centre{10.0 / double(bin), 12.0 / double(bin)};
      EXPECT_EQ(detector::bf(ge, r, centre).counts("test").data, detector::bf(rc, r, centre).counts("test").data);
    }
  }
}

// CoM of a GPU-resident encoded dataset (sums, the division and the empty-frame count on the device; pooled
// buffers): bit for bit the CPU reference's maps and the same empty-frame count, without a mask (S = the stored
// frame totals), with a mask (S = a third weighting), with a one-pixel mask that leaves frames empty (the detector
// centre), on repeated calls (reused buffers), and on a host copy of the same bytes (the host path).
TEST(DatasetEncodedCuda, CenterOfMassOnTheDeviceMatchesTheCpuReference) {
  QGPU_REQUIRE_CUDA();
  const std::string path = test::temp_path("com.h5");
  sample::write_sample(path, spec());
  const Dataset ref = io::load(path, opts("cpu", "dense"));
  const Dataset ge = io::load(path, opts("cuda", "encoded"));
  const Dataset he = ge.to_host();
  ASSERT_EQ(ge.representation(), "encoded");
  ASSERT_EQ(ge.backend(), Backend::cuda);
  // The dimmest pixel: with a total below the frame count, some frames hold 0 there (empty with it as the mask).
  const auto sums = detector::sum_pattern(ref).counts("test").data;
  std::size_t dim = 0;
  for (std::size_t i = 1; i < sums.size(); ++i)
    if (sums[i] < sums[dim]) dim = i;
  // (every pixel but the dimmest: its complement is cheaper, the stored totals and moment totals minus it)
  dpc::ComOptions none, half, one, most;
  half.mask.assign(20 * 24, 0);
  for (std::size_t i = 0; i < half.mask.size(); i += 2) half.mask[i] = 1;
  one.mask.assign(20 * 24, 0);
  one.mask[dim] = 1;
  most.mask.assign(20 * 24, 1);
  most.mask[dim] = 0;
  int which = 0;
  for (const dpc::ComOptions* o : {&most, &none, &half, &one, &none, &most}) {
    SCOPED_TRACE("mask " + std::to_string(which++));
    const dpc::ComResult want = dpc::center_of_mass(ref, *o);
    std::string strategy;
    for (const Dataset* d : {&ge, &he}) {
      const dpc::ComResult got = dpc::center_of_mass(*d, *o);
      EXPECT_TRUE(same_bits(got.com_row.data, want.com_row.data)) << backend_name(d->backend());
      EXPECT_TRUE(same_bits(got.com_col.data, want.com_col.data)) << backend_name(d->backend());
      EXPECT_EQ(got.empty_frames, want.empty_frames) << backend_name(d->backend());
      const std::string s = got.provenance.parameters.value("strategy", "");
      if (d == &ge) strategy = s;
      EXPECT_EQ(s, strategy) << "both backends take the same side";
    }
    EXPECT_EQ(strategy, o == &none   ? "encoded totals"
                        : o == &most ? "encoded totals minus complement"
                        : o == &one  ? "encoded masked sums"
                                     : strategy);
    if (o == &one && sums[dim] < ref.shape().frames()) EXPECT_GT(want.empty_frames, 0u);
  }
}
