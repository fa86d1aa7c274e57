// A cache built from a GPU-resident dataset: exact integer products equal the CPU reference's; float products
// equal the same products computed on the GPU resident (within 1e-6).
#include <gtest/gtest.h>

#include <cmath>

#include "cache/cache.hpp"
#include "cache_fixtures.hpp"
#include "detector/virtual_detector.hpp"
#include "dpc/com.hpp"
#include "dpc/idpc.hpp"
#include "dpc/rotation.hpp"
#include "support/cuda_required.hpp"

using namespace qgpu;

TEST(CacheCuda, ProductsMatchTheCpuReferenceAndTheGpuResident) {
  QGPU_REQUIRE_CUDA();
  const std::string source = test::temp_path("source.h5");
  sample::write_sample(source, test::small_cache_spec());
  const std::string cpu_path = test::temp_path("cpu.h5"), gpu_path = test::temp_path("gpu.h5");
  cache::build(test::load_cpu(source), cpu_path);
  io::LoadOptions o;
  o.backend = "cuda";
  const Dataset gpu = io::load(source, o);
  cache::build(gpu, gpu_path);
  const cache::Cache a = cache::open(cpu_path), b = cache::open(gpu_path);
  for (const char* n : {"sum_pattern", "frame_totals", "bf", "abf", "adf"}) EXPECT_EQ(a.u64(n).data, b.u64(n).data) << n;
  EXPECT_EQ(b.provenance("bf").at("backend"), "cuda");
  const dpc::DpcResult d = dpc::centered_dpc(dpc::center_of_mass(gpu));
  const dpc::RotationResult rot = dpc::calibrate_rotation(d);
  auto [fr, fc] = dpc::rotate_field(d, rot.angle_deg, rot.transpose);
  const Image<float> phase = dpc::idpc(fr, fc), cached = b.f32("idpc");
  ASSERT_EQ(cached.data.size(), phase.data.size());
  for (std::size_t i = 0; i < phase.data.size(); ++i) EXPECT_NEAR(cached.data[i], phase.data[i], 1e-6) << i;
  EXPECT_EQ(b.f32("dpc_row").data, d.dpc_row.data);
}
