// The radial basis (resident/basis/radial_basis.hpp): built while a sample loads encoded, it answers a centred disk,
// annulus or ring and the CoM over them with the same integers / float bits as the decode path and the dense CPU
// reference (an independent masked sum over every pixel); other masks fall through to the decode path. The CUDA
// tests (skipped without a GPU) build it in the CUDA loader's pass and compare with the CPU reference.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/result_memory.hpp"
#include "detector/mask.hpp"
#include "detector/virtual_detector.hpp"
#include "device/cuda/cuda_check.hpp"
#include "device/cuda/device_buffer.hpp"
#include "dpc/com.hpp"
#include "io/hdf5/load.hpp"
#include "io/sample/sample.hpp"
#include "resident/encoded/encoded_resident.hpp"
#include "support/cuda_required.hpp"
#include "support/temp_files.hpp"

using namespace qgpu;

namespace {

sample::SampleSpec spec() {
  sample::SampleSpec s;
  s.scan_rows = 12;
  s.scan_cols = 20;
  s.det_rows = 32;
  s.det_cols = 28;
  s.threads = 2;
  return s;
}

io::LoadOptions opts(const std::string& backend, const std::string& representation, const std::string& basis) {
  io::LoadOptions o;
  o.backend = backend;
  o.representation = representation;
  o.radial_basis = basis;
  return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string strategy(const SumImage& img) { return img.provenance().parameters.value("strategy", ""); }

std::vector<std::uint8_t> as_u8(const detector::Mask& m) { return {m.weights.begin(), m.weights.end()}; }

// Every query the basis serves, on `basis` (loaded with one), against `decoded` (the same data, no basis) and `ref`
// (dense CPU reference): equal integers / float bits, and the basis actually used.
void expect_basis_answers(const Dataset& basis, const Dataset& decoded, const Dataset& ref) {
  const RadialBasis* b = basis.encoded()->radial_basis();
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(decoded.encoded()->radial_basis(), nullptr);
  const double cr = b->center_row(), cc = b->center_col();
  const std::size_t R = basis.shape().det_rows, C = basis.shape().det_cols;
  const std::uint32_t K = b->boundaries();
  ASSERT_GE(K, 10u);
  int served = 0;
  for (std::uint32_t k = 1; k <= K; ++k) {  // every disk of an integer radius
    const detector::Mask m = detector::disk(R, C, cr, cc, double(k));
    const SumImage got = detector::virtual_image(basis, m);
    EXPECT_EQ(strategy(got), "radial basis") << "k " << k;
    EXPECT_EQ(got.counts("t").data, detector::virtual_image(decoded, m).counts("t").data) << "k " << k;
    EXPECT_EQ(got.counts("t").data, detector::virtual_image(ref, m).counts("t").data) << "k " << k;
    served += strategy(got) == "radial basis";
  }
  EXPECT_EQ(served, int(K));
  // Annuli / ADF rings between integer radii (inner exclusive as a shell boundary: inner + a hair, so that a pixel
  // exactly at distance `inner` is not half in), the BF radius and centre the viewer snaps to.
  for (auto [in, out] : std::vector<std::pair<double, double>>{{3, 7}, {5, 12}, {1, double(K)}, {8, 9}}) {
    const detector::Mask m = detector::annulus(R, C, cr, cc, in + 1e-9, out);
    const SumImage got = detector::virtual_image(basis, m);
    EXPECT_EQ(strategy(got), "radial basis") << in << ".." << out;
    EXPECT_EQ(got.counts("t").data, detector::virtual_image(ref, m).counts("t").data) << in << ".." << out;
    EXPECT_EQ(got.provenance().parameters["radial_basis"]["radii"], nlohmann::json::array({{int(in), int(out)}}));
  }
  EXPECT_EQ(strategy(detector::bf(basis, 6.0, detector::Center{cr, cc})), "radial basis");
  EXPECT_EQ(detector::bf(basis, 6.0, detector::Center{cr, cc}).counts("t").data,
            detector::bf(ref, 6.0, detector::Center{cr, cc}).counts("t").data);
  // Not a union of shells: an off-centre disk, a disk between boundaries that cuts a shell: the decode path, same values.
  for (const detector::Mask& m : {detector::disk(R, C, cr + 2.5, cc - 1.25, 5), detector::disk(R, C, cr, cc, 5.5)}) {
    const SumImage got = detector::virtual_image(basis, m);
    const bool union_of_shells = b->match(m.weights).has_value();
    if (!union_of_shells) EXPECT_NE(strategy(got), "radial basis");
    EXPECT_EQ(got.counts("t").data, detector::virtual_image(ref, m).counts("t").data);
  }
  EXPECT_FALSE(b->match(detector::disk(R, C, cr + 2.5, cc - 1.25, 5).weights).has_value());
  // Scan-binned answers (the service's scan_bin): b x b blocks of the reference's per-position sums, added up here;
  // through the basis (binned on the GPU for cuda) and through the decode path (an off-centre disk).
  const std::size_t sr = basis.shape().scan_rows, sc = basis.shape().scan_cols;
  for (std::size_t bin : {2, 4}) {
    ASSERT_EQ(sr % bin + sc % bin, 0u);
    for (const detector::Mask& m : {detector::disk(R, C, cr, cc, 6), detector::annulus(R, C, cr, cc, 3 + 1e-9, 9),
                                    detector::disk(R, C, cr + 2.5, cc - 1.25, 5)}) {
      const std::vector<std::uint64_t> full = detector::virtual_image(ref, m).counts("t").data;
      std::vector<std::uint64_t> want((sr / bin) * (sc / bin), 0);
      for (std::size_t r = 0; r < sr; ++r)
        for (std::size_t c = 0; c < sc; ++c) want[(r / bin) * (sc / bin) + c / bin] += full[r * sc + c];
      const SumImage got = detector::virtual_image(basis, m, bin);
      EXPECT_EQ(got.rows(), sr / bin);
      EXPECT_EQ(got.cols(), sc / bin);
      EXPECT_EQ(got.counts("t").data, want) << "bin " << bin << " " << strategy(got);
      EXPECT_EQ(got.provenance().parameters["scan_bin"], bin);
      EXPECT_EQ(got.provenance().output_shape, (std::vector<std::size_t>{sr / bin, sc / bin}));
    }
    EXPECT_EQ(strategy(detector::bf(basis, 6.0, detector::Center{cr, cc}, bin)), "radial basis");
  }
  EXPECT_THROW(detector::virtual_image(basis, detector::disk(R, C, cr, cc, 6), 3), InvalidArgument);  // 20 % 3
  EXPECT_THROW(detector::virtual_image(basis, detector::disk(R, C, cr, cc, 6), 0), InvalidArgument);
  // Scan-binned CoM (ComOptions::scan_bin): S, Sr, Sc of b x b blocks added up here from the reference's frames, then
  // divided in double and rounded to float; through the basis and through the decode path (an off-centre disk).
  {
    const HostArray4D frames = ref.read();
    const auto* v = reinterpret_cast<const std::uint16_t*>(frames.bytes.data());
    ASSERT_EQ(ref.dtype(), DType::u16);
    for (std::size_t bin : {2, 4})
      for (const detector::Mask& m : {detector::disk(R, C, cr, cc, 7), detector::disk(R, C, cr + 2.5, cc - 1.25, 5)}) {
        const std::size_t oc = sc / bin, n = (sr / bin) * oc;
        std::vector<std::uint64_t> S(n, 0), Sr(n, 0), Sc(n, 0);
        for (std::size_t f = 0; f < sr * sc; ++f) {
          const std::size_t o = (f / sc / bin) * oc + (f % sc) / bin;
          for (std::size_t p = 0; p < R * C; ++p) {
            const std::uint64_t x = std::uint64_t(v[f * R * C + p]) * m.weights[p];
            S[o] += x;
            Sr[o] += x * (p / C);
            Sc[o] += x * (p % C);
          }
        }
        dpc::ComOptions o;
        o.mask = as_u8(m);
        o.scan_bin = bin;
        const dpc::ComResult got = dpc::center_of_mass(basis, o), dec = dpc::center_of_mass(decoded, o);
        ASSERT_EQ(got.com_row.data.size(), n);
        EXPECT_EQ(got.com_row.rows, sr / bin);
        EXPECT_EQ(got.provenance.parameters["scan_bin"], bin);
        for (std::size_t i = 0; i < n; ++i) {
          const float wr = S[i] ? float(double(Sr[i]) / double(S[i])) : float((double(R) - 1) / 2);
          const float wc = S[i] ? float(double(Sc[i]) / double(S[i])) : float((double(C) - 1) / 2);
          EXPECT_EQ(got.com_row.data[i], wr) << "bin " << bin << " " << i;
          EXPECT_EQ(got.com_col.data[i], wc) << "bin " << bin << " " << i;
        }
        EXPECT_TRUE(same_bits(got.com_row.data, dec.com_row.data));
        EXPECT_TRUE(same_bits(got.com_col.data, dpc::center_of_mass(ref, o).com_col.data));
        EXPECT_EQ(got.provenance.parameters.value("strategy", "") == "radial basis", b->match(o.mask.data()).has_value());
      }
  }
  // CoM: whole detector and through a BF disk / a ring, float bits equal to the decode path's and the reference's.
  const dpc::ComResult whole = dpc::center_of_mass(basis);
  EXPECT_EQ(whole.provenance.parameters.value("strategy", ""), "radial basis");
  EXPECT_TRUE(same_bits(whole.com_row.data, dpc::center_of_mass(decoded).com_row.data));
  EXPECT_TRUE(same_bits(whole.com_col.data, dpc::center_of_mass(ref).com_col.data));
  for (const detector::Mask& m : {detector::disk(R, C, cr, cc, 7), detector::annulus(R, C, cr, cc, 4 + 1e-9, 11)}) {
    dpc::ComOptions o;
    o.mask = as_u8(m);
    const dpc::ComResult got = dpc::center_of_mass(basis, o);
    EXPECT_EQ(got.provenance.parameters.value("strategy", ""), "radial basis");
    EXPECT_TRUE(same_bits(got.com_row.data, dpc::center_of_mass(decoded, o).com_row.data));
    EXPECT_TRUE(same_bits(got.com_col.data, dpc::center_of_mass(ref, o).com_col.data));
  }
}


// Random counts below `below` (every dtype), frame-major, and the bytes of a `shape` dataset of them.
std::vector<std::uint8_t> random_counts(const Shape4D& shape, DType t, std::uint32_t below, std::uint64_t seed) {
  std::vector<std::uint8_t> bytes(shape.elements() * dtype_size(t));
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < shape.elements(); ++i) {
    // a third of the pixels zero (the kernel skips them), the others uniform
    const std::uint32_t v = rng() % 3 == 0 ? 0u : static_cast<std::uint32_t>(rng() % below);
    if (t == DType::u8) bytes[i] = static_cast<std::uint8_t>(v);
    else if (t == DType::u16) reinterpret_cast<std::uint16_t*>(bytes.data())[i] = static_cast<std::uint16_t>(v);
    else reinterpret_cast<std::uint32_t*>(bytes.data())[i] = v;
  }
  return bytes;
}

// The CUDA basis of these counts, fed in the given batch sizes (device memory, a stream of its own), finished.
std::unique_ptr<RadialBasis> cuda_basis(const Shape4D& shape, DType t, const std::vector<std::uint8_t>& bytes,
                                        double cr, double cc, const std::vector<std::size_t>& batches) {
  DeviceBuffer dev(bytes.size());
  dev.upload(bytes.data(), bytes.size());
  cudaStream_t stream = nullptr;
  QGPU_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto b = std::make_unique<RadialBasis>(shape, t, Backend::cuda, cr, cc);
  const std::size_t fb = shape.frame_pixels() * dtype_size(t);
  std::size_t first = 0;
  for (std::size_t n : batches) {
    b->add(dev.as<std::uint8_t>() + first * fb, first, n, stream);
    first += n;
  }
  EXPECT_EQ(first, shape.frames());
  b->finish();
  QGPU_CUDA(cudaStreamDestroy(stream));
  return b;
}

std::unique_ptr<RadialBasis> cpu_basis(const Shape4D& shape, DType t, const std::vector<std::uint8_t>& bytes,
                                       double cr, double cc) {
  auto b = std::make_unique<RadialBasis>(shape, t, Backend::cpu, cr, cc);
  b->add(bytes.data(), 0, shape.frames());
  b->finish();
  return b;
}

// Every prefix image (each boundary alone) and a two-run union: the CUDA build equals the CPU reference exactly.
void expect_same_prefix_images(const RadialBasis& gpu, const RadialBasis& cpu) {
  ASSERT_TRUE(cpu.usable()) << cpu.reason();
  ASSERT_TRUE(gpu.usable()) << gpu.reason();
  ASSERT_EQ(gpu.boundaries(), cpu.boundaries());
  const std::uint32_t K = cpu.boundaries();
  for (int q = 0; q < RadialBasis::kQuantities; ++q) {
    for (std::uint32_t k = 1; k <= K; ++k) ASSERT_EQ(gpu.sums({{k - 1, k}}, q), cpu.sums({{k - 1, k}}, q)) << q << " " << k;
    if (K >= 4) {
      const RadialBasis::Ranges two = {{0, 1}, {K / 2, K}};
      EXPECT_EQ(gpu.sums(two, q), cpu.sums(two, q)) << q;
    }
  }
}
}  // namespace

TEST(RadialBasis, ShellsFollowTheMaskRasterisation) {
  const Shape4D s{2, 3, 9, 11};
  RadialBasis b(s, DType::u16, Backend::cpu, 4.3, 5.1);
  // shell k-1 holds the pixels of disk(k) not in disk(k-1), with detector::disk's own rasterisation
  for (std::uint32_t k = 1; k <= b.boundaries(); ++k) {
    const auto disk = detector::disk(9, 11, 4.3, 5.1, double(k)).weights;
    for (std::size_t p = 0; p < disk.size(); ++p) EXPECT_EQ(disk[p] == 1, b.shell_of()[p] < k) << "k " << k << " p " << p;
  }
  // the last boundary holds every pixel: the farthest is (0, 0) at sqrt(4.3^2 + 5.1^2) = 6.67 -> K = 7
  EXPECT_EQ(b.boundaries(), 7u);
  EXPECT_EQ(b.bytes(), std::size_t(6) * 3 * 7 * 4 + 99 * 2);
  EXPECT_THROW(RadialBasis(s, DType::u16, Backend::cpu, std::nan(""), 1), InvalidArgument);
  EXPECT_THROW(RadialBasis(s, DType::f32, Backend::cpu, 4, 5), InvalidArgument);
}

TEST(RadialBasis, PrefixImagesOfAHandMadeDataset) {
  // 1 x 2 scan, 3 x 3 detector, centre (1, 1): shell 0 = centre + 4 edge neighbours (d <= 1), shell 1 = corners.
  HostArray4D a;
  a.shape = {1, 2, 3, 3};
  a.dtype = DType::u16;
  const std::vector<std::uint16_t> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 65535};
  a.bytes.resize(v.size() * 2);
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  RadialBasisRequest req;
  req.enabled = req.required = true;
  req.center = {{1.0, 1.0}};
  const Dataset e = encode_with_radial_basis(Dataset::from_host(std::move(a), {}, {}), req);
  const RadialBasis* b = e.encoded()->radial_basis();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->boundaries(), 2u);
  // frame 0: inner = 2 + 4 + 5 + 6 + 8 = 25, rows 0*2 + 1*4 + 1*5 + 1*6 + 2*8 = 31, cols 1*2 + 0*4 + 1*5 + 2*6 + 1*8 = 27
  EXPECT_EQ(b->sums({{0, 1}}, 0), (std::vector<std::uint64_t>{25, 0}));
  EXPECT_EQ(b->sums({{0, 1}}, 1), (std::vector<std::uint64_t>{31, 0}));
  EXPECT_EQ(b->sums({{0, 1}}, 2), (std::vector<std::uint64_t>{27, 0}));
  // corners: 1 + 3 + 7 + 9 = 20 and 65535 (rows 2 x 65535, cols 2 x 65535)
  EXPECT_EQ(b->sums({{1, 2}}, 0), (std::vector<std::uint64_t>{20, 65535}));
  EXPECT_EQ(b->sums({{1, 2}}, 1), (std::vector<std::uint64_t>{0 + 0 + 14 + 18, 131070}));
  EXPECT_EQ(b->sums({{0, 2}}, 0), (std::vector<std::uint64_t>{45, 65535}));
  EXPECT_EQ(e.encoded()->radial_basis_report()["center_source"], "given");
  EXPECT_EQ(describe(e)["radial_basis"]["boundaries"], 2);
}

TEST(RadialBasis, AMomentBeyondUint32DropsTheBasisWithAReason) {
  HostArray4D a;
  a.shape = {1, 2, 4, 4};
  a.dtype = DType::u32;
  std::vector<std::uint32_t> v(32, 0);
  v[15] = 0x7FFFFFFFu;  // frame 0, pixel (3, 3): x 3 exceeds uint32
  a.bytes.resize(v.size() * 4);
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  const Dataset host = Dataset::from_host(std::move(a), {}, {});
  RadialBasisRequest req;
  req.enabled = true;
  req.center = {{1.5, 1.5}};
  const Dataset e = encode_with_radial_basis(host, req);
  EXPECT_EQ(e.encoded()->radial_basis(), nullptr);
  const nlohmann::json r = e.encoded()->radial_basis_report();
  EXPECT_EQ(r["built"], false);
  EXPECT_NE(r["reason"].get<std::string>().find("exceeds uint32"), std::string::npos) << r.dump();
  // the queries still answer, through the decode path
  EXPECT_EQ(detector::virtual_image(e, detector::disk(4, 4, 1.5, 1.5, 3)).counts("t").data[0], 0x7FFFFFFFull);
  req.required = true;
  EXPECT_THROW(encode_with_radial_basis(host, req), Error);
}

TEST(RadialBasis, CpuLoadAnswersCentredDetectorsLikeTheDecodePath) {
  const std::string path = test::temp_path("basis_sample.h5");
  sample::write_sample(path, spec());
  const Dataset ref = io::load(path, opts("cpu", "dense", "off"));
  const Dataset dec = io::load(path, opts("cpu", "encoded", "off"));
  const Dataset bas = io::load(path, opts("cpu", "encoded", "on"));
  const nlohmann::json d = describe(bas);
  ASSERT_TRUE(d.contains("radial_basis")) << d.dump();
  EXPECT_EQ(d["radial_basis"]["built"], true) << d.dump();
  EXPECT_EQ(d["radial_basis"]["center_source"], "disk fit of the first loaded batch");
  EXPECT_FALSE(describe(dec).contains("radial_basis"));
  expect_basis_answers(bas, dec, ref);
}

TEST(RadialBasis, LoadOptionIsCheckedAndDecided) {
  const std::string path = test::temp_path("basis_opts.h5");
  sample::write_sample(path, spec());
  EXPECT_THROW(io::load(path, opts("cpu", "encoded", "yes")), InvalidArgument);
  EXPECT_THROW(io::load(path, opts("cpu", "dense", "on")), InvalidArgument);
  // auto: this scan is far below kAutoRadialBasisFrames, so no basis, and the decision says why
  const Dataset a = io::load(path, opts("cpu", "encoded", "auto"));
  EXPECT_EQ(a.encoded()->radial_basis(), nullptr);
  EXPECT_FALSE(describe(a).contains("radial_basis"));
  // a given centre is used as it is
  io::LoadOptions o = opts("cpu", "encoded", "on");
  o.radial_basis_center = {{15.0, 13.5}};
  const Dataset g = io::load(path, o);
  ASSERT_NE(g.encoded()->radial_basis(), nullptr);
  EXPECT_EQ(g.encoded()->radial_basis()->center_row(), 15.0);
  EXPECT_EQ(g.encoded()->radial_basis()->center_col(), 13.5);
  o.radial_basis_center = {{std::nan(""), 1.0}};
  EXPECT_THROW(io::load(path, o), InvalidArgument);
}

namespace {

// The moment totals [S | Sr | Sc] of an encoded resident with a radial basis and of its scan-binned copy come from
// the basis's whole-detector images (no decode): each equal to sums over the counts computed here (per frame, and per
// b x b block for the copy), and an off-centre annular CoM on the copy (totals minus the disk left out) equal to the
// masked sums here; a resident without a basis decodes for the same integers.
void expect_moments_from_the_basis(Backend backend) {
  const Shape4D s{8, 12, 9, 11};
  const std::size_t b = 2, P = s.frame_pixels(), oc = s.scan_cols / b, on = s.frames() / (b * b);
  const auto bytes = random_counts(s, DType::u16, 4000, 5);
  const auto* v = reinterpret_cast<const std::uint16_t*>(bytes.data());
  std::vector<std::uint8_t> mask(P, 0);  // all but an off-centre disk of radius 3 around (3, 7): an annular DPC
  for (std::size_t p = 0; p < P; ++p) {
    const double dr = double(p / s.det_cols) - 3, dc = double(p % s.det_cols) - 7;
    mask[p] = dr * dr + dc * dc > 9;
  }
  std::vector<std::vector<std::uint64_t>> full(3, std::vector<std::uint64_t>(s.frames(), 0)), binned(3),
      masked(3, std::vector<std::uint64_t>(on, 0));
  for (auto& q : binned) q.assign(on, 0);
  for (std::size_t f = 0; f < s.frames(); ++f)
    for (std::size_t p = 0; p < P; ++p) {
      const std::uint64_t x = v[f * P + p], w[3] = {x, x * (p / s.det_cols), x * (p % s.det_cols)};
      const std::size_t o = (f / s.scan_cols / b) * oc + f % s.scan_cols / b;
      for (int q = 0; q < 3; ++q) {
        full[q][f] += w[q];
        binned[q][o] += w[q];
        if (mask[p]) masked[q][o] += w[q];
      }
    }
  const auto make = [&](bool with_basis) {
    auto enc = std::make_shared<EncodedResident>(s, DType::u16, backend, 16);
    RadialBasisRequest req;
    req.enabled = req.required = with_basis;
    req.center = {{4.2, 5.1}};
    enc->request_radial_basis(req);
    enc->request_scan_binned({b, true});
    if (backend == Backend::cpu) {
      enc->append(bytes.data(), s.frames());
    } else {
      DeviceBuffer dev(bytes.size());
      dev.upload(bytes.data(), bytes.size());
      for (std::size_t f = 0; f < s.frames(); f += 40)  // batches that split binned rows
        enc->append(dev.as<std::uint8_t>() + f * P * 2, std::min<std::size_t>(40, s.frames() - f));
    }
    return enc;
  };
  const auto with = make(true), without = make(false);
  ASSERT_NE(with->radial_basis(), nullptr) << with->radial_basis_report().dump();
  const auto copy = with->scan_binned(b);
  ASSERT_NE(copy, nullptr) << with->scan_binned_report().dump();
  EXPECT_EQ(copy->moments_source(), "radial basis");  // computed as the copy completed
  EXPECT_EQ(copy->moment_sums(nullptr), binned);
  std::string used;
  EXPECT_EQ(copy->moment_sums(mask.data(), &used), masked);
  EXPECT_EQ(used, "totals minus complement");
  EXPECT_EQ(with->moments_source(), "");  // the full resident's on first use
  EXPECT_EQ(with->moment_sums(nullptr), full);
  EXPECT_EQ(with->moments_source(), "radial basis");
  EXPECT_EQ(without->moment_sums(nullptr), full);
  EXPECT_EQ(without->moments_source(), "decode");
  ASSERT_NE(without->scan_binned(b), nullptr);
  EXPECT_EQ(without->scan_binned(b)->moments_source(), "decode");
  EXPECT_EQ(without->scan_binned(b)->moment_sums(nullptr), binned);
  // a basis of another scan shape is not used: the decode answers
  EncodedResident fresh(s, DType::u16, backend, 16);
  if (backend == Backend::cpu) {
    fresh.append(bytes.data(), s.frames());
  } else {
    DeviceBuffer dev(bytes.size());
    dev.upload(bytes.data(), bytes.size());
    fresh.append(dev.data(), s.frames());
  }
  fresh.prepare_moments(*with->radial_basis(), 2);  // the basis's scan is 8 x 12, not 16 x 24
  EXPECT_EQ(fresh.moments_source(), "decode");
  EXPECT_EQ(fresh.moment_sums(nullptr), full);
}

}  // namespace

TEST(RadialBasis, MomentTotalsComeFromTheBasis) { expect_moments_from_the_basis(Backend::cpu); }

TEST(RadialBasisCuda, MomentTotalsComeFromTheBasis) {
  QGPU_REQUIRE_CUDA();
  expect_moments_from_the_basis(Backend::cuda);
}

TEST(RadialBasisCuda, CudaLoadAnswersCentredDetectorsLikeTheCpuReference) {
  QGPU_REQUIRE_CUDA();
  const std::string path = test::temp_path("basis_sample_cuda.h5");
  sample::write_sample(path, spec());
  const Dataset ref = io::load(path, opts("cpu", "dense", "off"));
  const Dataset dec = io::load(path, opts("cuda", "encoded", "off"));
  const Dataset bas = io::load(path, opts("cuda", "encoded", "on"));
  ASSERT_EQ(bas.backend(), Backend::cuda);
  EXPECT_EQ(describe(bas)["radial_basis"]["built"], true) << describe(bas).dump();
  expect_basis_answers(bas, dec, ref);
  // the CUDA build's prefix images equal the CPU build's for the same centre
  io::LoadOptions o = opts("cpu", "encoded", "on");
  const RadialBasis* gb = bas.encoded()->radial_basis();
  o.radial_basis_center = {{gb->center_row(), gb->center_col()}};
  const Dataset cb = io::load(path, o);
  for (int q = 0; q < 3; ++q)
    for (std::uint32_t k = 1; k <= gb->boundaries(); ++k)
      EXPECT_EQ(gb->sums({{0, k}}, q), cb.encoded()->radial_basis()->sums({{0, k}}, q)) << q << " " << k;
}

// Answers written into recycled host memory (core/result_memory.hpp; every size recycled here): vectors of garbage
// given back first are what the BF and CoM maps are downloaded into, and every value is the CPU reference's.
TEST(RadialBasisCuda, AnswersInRecycledMemoryEqualTheCpuReference) {
  QGPU_REQUIRE_CUDA();
  const std::string path = test::temp_path("basis_sample_recycled.h5");
  sample::write_sample(path, spec());
  const Dataset ref = io::load(path, opts("cpu", "dense", "off"));
  const Dataset bas = io::load(path, opts("cuda", "encoded", "on"));
  const RadialBasis* b = bas.encoded()->radial_basis();
  ASSERT_NE(b, nullptr);
  const detector::Center c{b->center_row(), b->center_col()};
  const std::size_t frames = ref.shape().frames();
  setenv("QGPU_RECYCLE_FROM_BYTES", "1", 1);
  for (int round = 0; round < 2; ++round) {
    recycle_result(std::vector<std::uint64_t>(frames, ~std::uint64_t{0}));
    for (int i = 0; i < 2; ++i) recycle_result(std::vector<float>(frames, -12345.5f));
    const SumImage got = detector::bf(bas, 5.0, c);
    EXPECT_EQ(strategy(got), "radial basis");
    EXPECT_EQ(got.counts("t").data, detector::bf(ref, 5.0, c).counts("t").data) << "round " << round;
    const dpc::ComResult com = dpc::center_of_mass(bas), want = dpc::center_of_mass(ref);
    EXPECT_TRUE(same_bits(com.com_row.data, want.com_row.data)) << "round " << round;
    EXPECT_TRUE(same_bits(com.com_col.data, want.com_col.data)) << "round " << round;
  }
  unsetenv("QGPU_RECYCLE_FROM_BYTES");
}

TEST(RadialBasisCuda, ToEncodedOnTheGpuBuildsTheSameBasis) {
  QGPU_REQUIRE_CUDA();
  const std::string path = test::temp_path("basis_to_encoded.h5");
  sample::write_sample(path, spec());
  const Dataset ref = io::load(path, opts("cpu", "dense", "off"));
  RadialBasisRequest req;
  req.enabled = req.required = true;
  const Dataset g = encode_with_radial_basis(ref.to_device(), req);
  const Dataset c = encode_with_radial_basis(ref, req);
  ASSERT_NE(g.encoded()->radial_basis(), nullptr);
  EXPECT_EQ(g.encoded()->radial_basis()->center_row(), c.encoded()->radial_basis()->center_row());
  expect_basis_answers(g, ref.to_device().to_encoded(), ref);
}

// The CUDA build kernel against the CPU loop on every count dtype: frames fed in uneven batches at offsets (the
// loader's scan rows) on a non-default stream, an off-centre centre, zero pixels, and the first batch's summed
// pattern (the centre fit's input) from the CUDA kernel against the host sum.
TEST(RadialBasisCuda, BatchedBuildEqualsTheCpuLoopOnEveryDtype) {
  QGPU_REQUIRE_CUDA();
  const Shape4D shape{5, 13, 17, 23};  // 65 frames
  for (DType t : {DType::u8, DType::u16, DType::u32}) {
    SCOPED_TRACE(dtype_name(t));
    // counts below `below`: u32 beyond 16 bits, and still every weighted sum within uint32 (391 pixels x 400000 x
    // index 22 < 2^32), so that the basis is usable and every value is compared
    const std::uint32_t below = t == DType::u8 ? 256u : t == DType::u16 ? 65536u : 400000u;
    const auto bytes = random_counts(shape, t, below, 11);
    const auto gpu = cuda_basis(shape, t, bytes, 7.3, 10.8, {7, 20, 1, 37});
    const auto cpu = cpu_basis(shape, t, bytes, 7.3, 10.8);
    expect_same_prefix_images(*gpu, *cpu);
    DeviceBuffer dev(bytes.size());
    dev.upload(bytes.data(), bytes.size());
    EXPECT_EQ(RadialBasis::batch_sum_pattern(shape, t, Backend::cuda, dev.data(), 9, nullptr),
              RadialBasis::batch_sum_pattern(shape, t, Backend::cpu, bytes.data(), 9, nullptr));
  }
}

// Launch limits of the build: one add of more than 65535 frames (the kernel's grid-stride loop over a grid clamped
// to 65535 blocks), and the most boundaries the shared-memory histograms allow (K = 2048: 3 x 2048 uint64 = 48 KiB,
// the default dynamic shared-memory limit of a block).
TEST(RadialBasisCuda, MoreThan65535FramesAndTheLargestShellCount) {
  QGPU_REQUIRE_CUDA();
  {
    const Shape4D shape{2, 35000, 3, 4};  // 70000 frames in one add
    const auto bytes = random_counts(shape, DType::u8, 256, 5);
    const auto gpu = cuda_basis(shape, DType::u8, bytes, 1.0, 1.5, {shape.frames()});
    expect_same_prefix_images(*gpu, *cpu_basis(shape, DType::u8, bytes, 1.0, 1.5));
  }
  {
    const Shape4D shape{2, 3, 1, 2048};  // centre one pixel left of the row: the last pixel is 2048 px away
    const auto bytes = random_counts(shape, DType::u16, 50, 6);
    const auto gpu = cuda_basis(shape, DType::u16, bytes, 0.0, -1.0, {2, 4});
    EXPECT_EQ(gpu->boundaries(), RadialBasis::kMaxBoundaries);
    expect_same_prefix_images(*gpu, *cpu_basis(shape, DType::u16, bytes, 0.0, -1.0));
  }
}

// One shell's moment beyond uint32 while every other sum fits: uint16 frames are summed in 32-bit shared histograms,
// whose wrap must drop the basis as the CPU reference's 64-bit sums do (a wrapped shell would leave a prefix that
// fits and is wrong). 400 x 400 detector, centre (0, 0): the ~627 pixels of the shell of (399, 0) at 65535 counts
// weigh ~1e10 by row and by column; the counts (~4e7) fit.
TEST(RadialBasisCuda, AShellSumBeyondUint32InTheSharedHistogramDropsTheBasis) {
  QGPU_REQUIRE_CUDA();
  const Shape4D shape{1, 3, 400, 400};
  const RadialBasis probe(shape, DType::u16, Backend::cpu, 0.0, 0.0);
  const std::uint16_t target = probe.shell_of()[399 * 400];
  std::vector<std::uint16_t> v(shape.frames() * shape.frame_pixels(), 0);
  std::size_t in_shell = 0;
  for (std::size_t p = 0; p < shape.frame_pixels(); ++p)
    if (probe.shell_of()[p] == target) {
      v[shape.frame_pixels() + p] = 65535;  // frame 1 only
      ++in_shell;
    }
  ASSERT_GT(in_shell, 500u);
  std::vector<std::uint8_t> bytes(v.size() * 2);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  const auto cpu = cpu_basis(shape, DType::u16, bytes, 0.0, 0.0);
  EXPECT_FALSE(cpu->usable());
  const auto gpu = cuda_basis(shape, DType::u16, bytes, 0.0, 0.0, {3});
  EXPECT_FALSE(gpu->usable());
  EXPECT_NE(gpu->reason().find("exceeds uint32"), std::string::npos) << gpu->reason();
  // 4095 counts there (~6.5e8 by row and by column) fit: usable, and equal to the CPU reference
  for (auto& x : v) x = x ? 4095 : 0;
  std::memcpy(bytes.data(), v.data(), bytes.size());
  const auto gpu_fits = cuda_basis(shape, DType::u16, bytes, 0.0, 0.0, {1, 2});
  const auto cpu_fits = cpu_basis(shape, DType::u16, bytes, 0.0, 0.0);
  ASSERT_TRUE(cpu_fits->usable());
  ASSERT_TRUE(gpu_fits->usable());
  expect_same_prefix_images(*gpu_fits, *cpu_fits);
}

// A weighted sum beyond uint32 on the GPU build: the basis is dropped with the reason (the queries decode instead),
// and a load that requires it fails; as the CPU reference does (AMomentBeyondUint32DropsTheBasisWithAReason).
TEST(RadialBasisCuda, AMomentBeyondUint32DropsTheBasisWithAReason) {
  QGPU_REQUIRE_CUDA();
  HostArray4D a;
  a.shape = {1, 2, 4, 4};
  a.dtype = DType::u32;
  std::vector<std::uint32_t> v(32, 0);
  v[15] = 0x7FFFFFFFu;  // frame 0, pixel (3, 3): x 3 exceeds uint32
  v[16] = 5;            // frame 1 fits
  a.bytes.resize(v.size() * 4);
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  const Dataset dev = Dataset::from_host(std::move(a), {}, {}).to_device();
  RadialBasisRequest req;
  req.enabled = true;
  req.center = {{1.5, 1.5}};
  const Dataset e = encode_with_radial_basis(dev, req);
  ASSERT_EQ(e.backend(), Backend::cuda);
  EXPECT_EQ(e.encoded()->radial_basis(), nullptr);
  const nlohmann::json r = e.encoded()->radial_basis_report();
  EXPECT_EQ(r["built"], false);
  EXPECT_NE(r["reason"].get<std::string>().find("exceeds uint32"), std::string::npos) << r.dump();
  EXPECT_EQ(detector::virtual_image(e, detector::disk(4, 4, 1.5, 1.5, 3)).counts("t").data,
            (std::vector<std::uint64_t>{0x7FFFFFFFull, 5}));
  req.required = true;
  EXPECT_THROW(encode_with_radial_basis(dev, req), Error);
}

// The basis and the scan-binned copy built in one pass over each batch (8/16-bit counts; the loads that ask for both,
// as the viewer's do at large scans): the prefix images equal the CPU reference's and the copy's frames the b x b
// block sums computed here, for bins 2 and 4, batches that split scan rows and binned rows anywhere,
// the vector path (108 pixels) and the scalar one (35); a moment beyond uint32 in one frame drops
// the basis (with its reason) and leaves the copy.
TEST(RadialBasisCuda, BuiltInOnePassWithTheScanBinnedCopy) {
  QGPU_REQUIRE_CUDA();
  const auto block_sums = [](const Shape4D& s, DType t, const std::vector<std::uint8_t>& bytes, std::size_t b) {
    const std::size_t P = s.frame_pixels(), oc = s.scan_cols / b;
    std::vector<std::uint64_t> out((s.scan_rows / b) * oc * P, 0);
    for (std::size_t f = 0; f < s.frames(); ++f)
      for (std::size_t p = 0; p < P; ++p) {
        const std::size_t i = f * P + p;
        const std::uint64_t v = t == DType::u8 ? bytes[i] : reinterpret_cast<const std::uint16_t*>(bytes.data())[i];
        out[((f / s.scan_cols / b) * oc + f % s.scan_cols / b) * P + p] += v;
      }
    return out;
  };
  // an encoded resident of the counts with both asked for (centre given), appended in `batch`-frame batches
  const auto build = [](const Shape4D& s, DType t, const std::vector<std::uint8_t>& bytes, std::size_t b,
                        std::size_t batch, double cr, double cc) {
    DeviceBuffer dev(bytes.size());
    dev.upload(bytes.data(), bytes.size());
    auto enc = std::make_shared<EncodedResident>(s, t, Backend::cuda, 16);
    RadialBasisRequest req;
    req.enabled = true;
    req.center = {{cr, cc}};
    enc->request_radial_basis(req);
    enc->request_scan_binned({b, true});
    const std::size_t fb = s.frame_pixels() * dtype_size(t);
    for (std::size_t f = 0; f < s.frames(); f += batch)
      enc->append(dev.as<std::uint8_t>() + f * fb, std::min(batch, s.frames() - f));
    return enc;
  };
  struct Case {
    Shape4D shape;
    DType t;
    std::uint32_t below;
  };
  // (the third: ~2e7 counts a frame on 64 x 64 pixels, so that a binned frame's total times 63 passes uint32 while
  // every value fits: the build's checked adds, not its unchecked ones)
  for (const Case& c : {Case{{12, 20, 9, 12}, DType::u16, 65536}, Case{{8, 12, 5, 7}, DType::u8, 256},
                        Case{{4, 8, 64, 64}, DType::u16, 10000}}) {
    const auto bytes = random_counts(c.shape, c.t, c.below, 21);
    const auto cpu = cpu_basis(c.shape, c.t, bytes, 4.3, 5.6);
    ASSERT_TRUE(cpu->usable());
    for (std::size_t b : {2, 4})
      for (std::size_t batch : {std::size_t(5), std::size_t(37), c.shape.frames()}) {
        SCOPED_TRACE(dtype_name(c.t) + ", bin " + std::to_string(b) + ", batches of " + std::to_string(batch));
        const auto enc = build(c.shape, c.t, bytes, b, batch, 4.3, 5.6);
        ASSERT_NE(enc->radial_basis(), nullptr) << enc->radial_basis_report().dump();
        EXPECT_TRUE(enc->radial_basis()->builds_with_binned(b));
        expect_same_prefix_images(*enc->radial_basis(), *cpu);
        const auto copy = enc->scan_binned(b);
        ASSERT_NE(copy, nullptr) << enc->scan_binned_report().dump();
        const HostArray4D got = copy->read();
        std::vector<std::uint64_t> v(got.bytes.size() / 4);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = reinterpret_cast<const std::uint32_t*>(got.bytes.data())[i];
        EXPECT_EQ(v, block_sums(c.shape, c.t, bytes, b));
      }
  }
  // 16-bit counts whose column moment in frame 50 passes uint32 (its prefix over the shells): the basis goes, the
  // copy stays
  const Shape4D s{8, 8, 300, 300};
  std::vector<std::uint16_t> v(s.frames() * s.frame_pixels(), 0);
  for (std::size_t p = 0; p < s.frame_pixels(); ++p)
    if (p % 300 == 299) v[50 * s.frame_pixels() + p] = 65535;  // the last column: 300 x 65535 x 299 > 2^32
  v[7] = 3;
  std::vector<std::uint8_t> bytes(v.size() * 2);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  const auto enc = build(s, DType::u16, bytes, 2, 24, 0.0, 0.0);
  EXPECT_EQ(enc->radial_basis(), nullptr);
  EXPECT_NE(enc->radial_basis_report()["reason"].get<std::string>().find("exceeds uint32"), std::string::npos)
      << enc->radial_basis_report().dump();
  ASSERT_NE(enc->scan_binned(2), nullptr) << enc->scan_binned_report().dump();
  const HostArray4D got = enc->scan_binned(2)->read();
  EXPECT_EQ(reinterpret_cast<const std::uint32_t*>(got.bytes.data())[7], 3u);
  EXPECT_EQ(reinterpret_cast<const std::uint32_t*>(got.bytes.data())[(3 * 4 + 1) * s.frame_pixels() + 299], 65535u);
}
