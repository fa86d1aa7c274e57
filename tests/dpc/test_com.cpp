// Centre of mass and centred DPC on the CPU reference.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "dpc/com.hpp"
#include "dpc_fixtures.hpp"

namespace qgpu::dpc {
namespace {

using testing::make_dataset;

// Bright pixel of frame (sr, sc): a position that differs per frame and covers the detector corners.
std::size_t bright_row(std::size_t sr, std::size_t sc) { return (sr * 5 + sc * 3) % 16; }
std::size_t bright_col(std::size_t sr, std::size_t sc) { return (sr * 7 + sc * 11) % 20; }

template <class T> class ComAllDtypes : public ::testing::Test {};
using CountTypes = ::testing::Types<std::uint8_t, std::uint16_t, std::uint32_t>;
TYPED_TEST_SUITE(ComAllDtypes, CountTypes);

TYPED_TEST(ComAllDtypes, SingleBrightPixelGivesItsPositionExactly) {
  using T = TypeParam;
  const T bright = std::numeric_limits<T>::max();  // largest count: the sums must still be exact
  const Shape4D sh{3, 4, 16, 20};
  const Dataset ds = make_dataset<T>(sh, [&](auto sr, auto sc, auto dr, auto dc) {
    return (dr == bright_row(sr, sc) && dc == bright_col(sr, sc)) ? bright : T(0);
  });
  const ComResult r = center_of_mass(ds);
  ASSERT_EQ(r.com_row.rows, 3u);
  ASSERT_EQ(r.com_row.cols, 4u);
  for (std::size_t sr = 0; sr < 3; ++sr)
    for (std::size_t sc = 0; sc < 4; ++sc) {
      EXPECT_EQ(r.com_row.at(sr, sc), float(bright_row(sr, sc))) << sr << "," << sc;
      EXPECT_EQ(r.com_col.at(sr, sc), float(bright_col(sr, sc))) << sr << "," << sc;
    }
  EXPECT_EQ(r.empty_frames, 0u);
  EXPECT_EQ(r.provenance.input_dtype, dtype_name(dtype_of<T>::value));
}

TYPED_TEST(ComAllDtypes, MatchesLongDoubleReferenceOnRandomCounts) {
  using T = TypeParam;
  const Shape4D sh{4, 5, 12, 18};
  const Dataset ds = testing::poisson_dataset<T>(sh, 200.0, 11);
  const ComResult r = center_of_mass(ds);
  const T* p = reinterpret_cast<const T*>(ds.host_bytes().data());
  for (std::size_t f = 0; f < sh.frames(); ++f) {
    long double s = 0, sr = 0, sc = 0;
    for (std::size_t i = 0; i < sh.frame_pixels(); ++i) {
      const long double v = p[f * sh.frame_pixels() + i];
      s += v;
      sr += v * (i / sh.det_cols);
      sc += v * (i % sh.det_cols);
    }
    const double er = s > 0 ? double(sr / s) : 5.5, ec = s > 0 ? double(sc / s) : 8.5;
    EXPECT_NEAR(r.com_row.data[f], er, 1e-5) << "frame " << f;
    EXPECT_NEAR(r.com_col.data[f], ec, 1e-5) << "frame " << f;
  }
}

TEST(Com, WeightedMeanOfTwoPixels) {
  // 1 count at (2, 3) and 3 counts at (6, 7): CoM = ((2 + 18) / 4, (3 + 21) / 4) = (5, 6).
  const Dataset ds = make_dataset<std::uint16_t>({1, 1, 8, 9}, [](auto, auto, auto dr, auto dc) {
    if (dr == 2 && dc == 3) return std::uint16_t(1);
    if (dr == 6 && dc == 7) return std::uint16_t(3);
    return std::uint16_t(0);
  });
  const ComResult r = center_of_mass(ds);
  EXPECT_EQ(r.com_row.data[0], 5.0f);
  EXPECT_EQ(r.com_col.data[0], 6.0f);
}

TEST(Com, EmptyFrameGetsDetectorCentreAndIsCounted) {
  const Dataset ds = make_dataset<std::uint16_t>({2, 2, 16, 20}, [](auto sr, auto sc, auto dr, auto dc) {
    if (sr == 1 && sc == 0) return std::uint16_t(0);  // the empty frame
    return std::uint16_t(dr == 4 && dc == 5 ? 9 : 0);
  });
  const ComResult r = center_of_mass(ds);
  EXPECT_EQ(r.empty_frames, 1u);
  EXPECT_EQ(r.com_row.at(1, 0), 7.5f);
  EXPECT_EQ(r.com_col.at(1, 0), 9.5f);
  EXPECT_EQ(r.com_row.at(0, 0), 4.0f);
  EXPECT_EQ(r.com_col.at(1, 1), 5.0f);
  EXPECT_EQ(r.provenance.parameters.at("empty_frames"), 1);
}

TEST(Com, MaskRestrictsTheSum) {
  // Two lit pixels; the mask keeps only the second one, so the CoM sits on it.
  const Shape4D sh{1, 2, 10, 10};
  const Dataset ds = make_dataset<std::uint8_t>(sh, [](auto, auto sc, auto dr, auto dc) {
    if (dr == 1 && dc == 1) return std::uint8_t(50);
    if (sc == 0 && dr == 8 && dc == 6) return std::uint8_t(5);  // only in frame 0
    return std::uint8_t(0);
  });
  ComOptions o;
  o.mask.assign(100, 0);
  for (std::size_t r = 5; r < 10; ++r)
    for (std::size_t c = 5; c < 10; ++c) o.mask[r * 10 + c] = 1;
  const ComResult unmasked = center_of_mass(ds);
  EXPECT_NEAR(unmasked.com_row.data[0], (50.0 * 1 + 5.0 * 8) / 55.0, 1e-6);
  const ComResult masked = center_of_mass(ds, o);
  EXPECT_EQ(masked.com_row.data[0], 8.0f);
  EXPECT_EQ(masked.com_col.data[0], 6.0f);
  // Frame 1 has nothing inside the mask: empty, at the centre.
  EXPECT_EQ(masked.empty_frames, 1u);
  EXPECT_EQ(masked.com_row.data[1], 4.5f);
  EXPECT_EQ(masked.com_col.data[1], 4.5f);
  EXPECT_EQ(masked.provenance.parameters.at("mask"), true);
  EXPECT_EQ(masked.provenance.parameters.at("mask_pixels"), 25);
}

TEST(Com, ProvenanceDescribesTheOperation) {
  const Dataset ds = testing::poisson_dataset<std::uint16_t>({2, 3, 8, 8}, 50.0, 3);
  const ComResult r = center_of_mass(ds);
  EXPECT_EQ(r.provenance.operation, "dpc.center_of_mass");
  EXPECT_EQ(r.provenance.backend, "cpu");
  EXPECT_EQ(r.provenance.input_dtype, "uint16");
  EXPECT_EQ(r.provenance.input_shape, (std::vector<std::size_t>{2, 3, 8, 8}));
  EXPECT_EQ(r.provenance.output_dtype, "float32");
  EXPECT_EQ(r.provenance.output_shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(r.provenance.representation, "dense");
  EXPECT_EQ(r.com_col.provenance.parameters.at("component"), "col");
}

TEST(Com, BadMasksAreRejected) {
  const Dataset ds = testing::poisson_dataset<std::uint16_t>({1, 2, 8, 8}, 50.0, 5);
  ComOptions wrong_size;
  wrong_size.mask.assign(63, 1);
  EXPECT_THROW(center_of_mass(ds, wrong_size), InvalidArgument);
  ComOptions not_binary;
  not_binary.mask.assign(64, 1);
  not_binary.mask[10] = 2;
  EXPECT_THROW(center_of_mass(ds, not_binary), InvalidArgument);
  ComOptions nothing;
  nothing.mask.assign(64, 0);
  EXPECT_THROW(center_of_mass(ds, nothing), InvalidArgument);
}

TEST(CenteredDpc, SubtractsTheMeanOrTheGivenReference) {
  ComResult com;
  com.com_row = testing::image(1, 3);
  com.com_col = testing::image(1, 3);
  com.com_row.data = {1.0f, 2.0f, 6.0f};
  com.com_col.data = {-1.0f, 0.0f, 4.0f};
  const DpcResult m = centered_dpc(com);
  EXPECT_DOUBLE_EQ(m.ref_row, 3.0);
  EXPECT_DOUBLE_EQ(m.ref_col, 1.0);
  EXPECT_EQ(m.dpc_row.data, (std::vector<float>{-2.0f, -1.0f, 3.0f}));
  EXPECT_EQ(m.dpc_col.data, (std::vector<float>{-2.0f, -1.0f, 3.0f}));
  EXPECT_EQ(m.provenance.parameters.at("reference_source"), "mean_com");

  const DpcResult g = centered_dpc(com, std::pair{0.5, -1.0});
  EXPECT_DOUBLE_EQ(g.ref_row, 0.5);
  EXPECT_EQ(g.dpc_row.data, (std::vector<float>{0.5f, 1.5f, 5.5f}));
  EXPECT_EQ(g.dpc_col.data, (std::vector<float>{0.0f, 1.0f, 5.0f}));
  EXPECT_EQ(g.provenance.operation, "dpc.centered_dpc");

  // The one dispatch rule: this host step keeps its input's backend, so a chain begun on the GPU stays there.
  ComResult on_gpu = com;
  on_gpu.provenance.backend = "cuda";
  const DpcResult d = centered_dpc(on_gpu);
  EXPECT_EQ(d.provenance.backend, "cuda");
  EXPECT_EQ(d.dpc_row.provenance.backend, "cuda");
  EXPECT_EQ(d.dpc_col.provenance.backend, "cuda");

  ComResult bad = com;
  bad.com_col = testing::image(3, 1);
  EXPECT_THROW(centered_dpc(bad), InvalidArgument);
  EXPECT_THROW(centered_dpc(ComResult{}), InvalidArgument);
}

}  // namespace
}  // namespace qgpu::dpc
