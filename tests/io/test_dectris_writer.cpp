// io::DectrisWriter: frames encoded here and chunks given verbatim read back exactly (our decoder and the HDF5
// plugin), every dtype and byte order, 4D and uncompressed layouts, the stored cd_values, checked chunk headers,
// atomic output. Conversions of every format: tests/python/test_convert.py.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "io/hdf5/load.hpp"
#include "io/hdf5/write_dectris.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

namespace qgpu {
namespace {

using test::expect_error;

template <class T>
std::vector<T> frames_of(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>)
      x = T(std::int32_t(rng() % 2001) - 1000) * T(0.125);
    else
      x = T(rng());
  }
  return v;
}

template <class T>
void round_trip(DType dt, bool big, bool four_d, bool compress) {
  const std::size_t sr = 3, sc = 5, dr = 17, dc = 13, n = sr * sc * dr * dc;  // odd sizes: partial blocks, tail
  const std::vector<T> v = frames_of<T>(n, 7 + unsigned(dt));
  const std::string path =
      test::temp_path(dtype_name(dt) + (big ? "_be" : "") + (four_d ? "_4d" : "") + (compress ? "" : "_plain") + ".h5");
  io::DectrisLayout l;
  l.det_rows = dr;
  l.det_cols = dc;
  l.dtype = dt;
  l.frames = sr * sc;
  l.scan_rows = sr;
  l.scan_cols = sc;
  l.four_d = four_d;
  l.big_endian = big;
  l.compress = compress;
  l.fixed_array_index = four_d || dt == DType::i16;  // the HDF5 1.10 format's fixed-array chunk index
  l.threads = 2;
  l.calibration = {{"energy_kev", 200.0}, {"scan_step_angstrom", 0.5}};
  {
    io::DectrisWriter w;
    w.open(path, l);
    if (compress) {
      const std::vector<unsigned> cd = w.stored_cd_values();
      ASSERT_GE(cd.size(), 5u);
      EXPECT_EQ(cd[2], sizeof(T));
      EXPECT_EQ(cd[3], 0u);  // the default block, stored as DECTRIS does
      EXPECT_EQ(cd[4], 2u);  // LZ4
    }
    w.write_frames(0, 4, v.data());  // two batches: the second encodes while the first is written
    w.write_frames(4, sr * sc - 4, v.data() + 4 * dr * dc);
    EXPECT_EQ(w.frames_written(), sr * sc);
    w.close();
  }
  // (uncompressed chunks: our decoder reads bitshuffle chunks only; auto picks the HDF5 path)
  for (const char* decoder : {compress ? "quantem" : "auto", "hdf5"}) {
    io::LoadOptions o;
    o.backend = "cpu";
    o.decoder = decoder;
    const Dataset ds = io::load(path, o);
    EXPECT_EQ(ds.dtype(), dt);
    EXPECT_EQ(ds.shape().dims(), (std::vector<std::size_t>{sr, sc, dr, dc}));
    ASSERT_EQ(ds.host_bytes().size(), n * sizeof(T));
    EXPECT_EQ(std::memcmp(ds.host_bytes().data(), v.data(), n * sizeof(T)), 0) << decoder;
    EXPECT_EQ(ds.metadata()["calibration"]["energy_kev"], 200.0);
    EXPECT_EQ(ds.metadata()["file"]["byte_order"], big ? "big" : "little");
  }
}

TEST(DectrisWriter, EveryDtypeByteOrderAndLayoutReadsBack) {
  round_trip<std::uint8_t>(DType::u8, false, false, true);
  round_trip<std::uint16_t>(DType::u16, false, false, true);
  round_trip<std::uint16_t>(DType::u16, true, false, true);
  round_trip<std::uint32_t>(DType::u32, false, true, true);
  round_trip<std::uint32_t>(DType::u32, true, false, true);
  round_trip<std::int16_t>(DType::i16, false, false, true);
  round_trip<std::int32_t>(DType::i32, true, false, true);
  round_trip<float>(DType::f32, false, false, true);
  round_trip<float>(DType::f32, true, true, true);
  round_trip<std::uint16_t>(DType::u16, true, false, false);
  round_trip<std::uint16_t>(DType::u16, false, true, false);
}

TEST(DectrisWriter, CompressedChunksStoredVerbatim) {
  const std::size_t dr = 24, dc = 20, frames = 6;
  const auto v = frames_of<std::uint16_t>(frames * dr * dc, 3);
  const std::string path = test::temp_path("chunks.h5");
  io::DectrisLayout l;
  l.det_rows = dr;
  l.det_cols = dc;
  l.dtype = DType::u16;
  l.frames = frames;
  l.scan_rows = 2;
  l.scan_cols = 3;
  io::DectrisWriter w;
  w.open(path, l);
  // Frames arrive out of order, as a live stream may deliver them; one written twice.
  for (std::size_t f : {5u, 0u, 3u, 1u, 2u, 4u, 2u}) {
    const std::vector<std::uint8_t> chunk = io::codec::encode_chunk(w.params(), dr * dc, v.data() + f * dr * dc);
    w.write_chunk(f, chunk.data(), chunk.size());
  }
  EXPECT_EQ(w.frames_written(), frames);
  // Checked: frame range, header size and the dataset's block size.
  const std::vector<std::uint8_t> good = io::codec::encode_chunk(w.params(), dr * dc, v.data());
  expect_error<InvalidArgument>([&] { w.write_chunk(6, good.data(), good.size()); }, {"frame 6", "6 frames"});
  expect_error<InvalidArgument>([&] { w.write_chunk(0, good.data(), 11); }, {"12-byte"});
  io::codec::BitshuffleParams other = w.params();
  other.block_elems = 256;
  const std::vector<std::uint8_t> odd = io::codec::encode_chunk(other, dr * dc, v.data());
  expect_error<InvalidArgument>([&] { w.write_chunk(0, odd.data(), odd.size()); }, {"blocks of 512 bytes", "8192"});
  const std::vector<std::uint8_t> small = io::codec::encode_chunk(w.params(), dr * dc / 2, v.data());
  expect_error<InvalidArgument>([&] { w.write_chunk(0, small.data(), small.size()); }, {"decodes to 480 bytes"});
  w.close();
  io::LoadOptions o;
  o.backend = "cpu";
  const Dataset ds = io::load(path, o);
  EXPECT_EQ(std::memcmp(ds.host_bytes().data(), v.data(), v.size() * 2), 0);
}

TEST(DectrisWriter, AtomicAndRefusals) {
  const std::string path = test::temp_path("atomic.h5");
  std::filesystem::remove(path);
  io::DectrisLayout l;
  l.det_rows = l.det_cols = 8;
  l.frames = 4;
  {
    io::DectrisWriter w;
    w.open(path, l);
    EXPECT_FALSE(std::filesystem::exists(path));  // a temporary until close()
  }                                               // destroyed without close: nothing at the target, no temporary left
  EXPECT_FALSE(std::filesystem::exists(path));
  for (const auto& e : std::filesystem::directory_iterator(test::temp_dir()))
    EXPECT_EQ(e.path().filename().string().find("atomic.tmp-"), std::string::npos) << e.path();
  const std::string fifo = test::temp_path("fifo.h5");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error<IoError>([&] { io::DectrisWriter().open(fifo, l); }, {"FIFO"});
  io::DectrisLayout bad = l;
  bad.scan_rows = 3;
  bad.scan_cols = 2;
  expect_error<InvalidArgument>([&] { io::DectrisWriter().open(path, bad); }, {"3 x 2", "4 frames"});
  bad = l;
  bad.dtype = DType::u64;
  expect_error<InvalidArgument>([&] { io::DectrisWriter().open(path, bad); }, {"uint64"});
  bad = l;
  bad.bitshuffle.block_elems = 12;
  expect_error<InvalidArgument>([&] { io::DectrisWriter().open(path, bad); }, {"multiple of 8"});
  bad = l;
  bad.frames = 0;
  expect_error<InvalidArgument>([&] { io::DectrisWriter().open(path, bad); }, {"frames"});
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace qgpu
