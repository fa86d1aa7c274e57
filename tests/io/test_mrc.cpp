// MRC reader: the header parser's checks (every field named in its error), the byte order of the machine stamp,
// recognition by "MAP ", the sample writer read back through inspect. Data are compared with numpy in
// tests/python/test_formats.py.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.hpp"
#include "io/mrc/mrc_reader.hpp"
#include "io/mrc/write_mrc.hpp"
#include "io/source/readers.hpp"
#include "support/expect_error.hpp"
#include "support/temp_files.hpp"

namespace qgpu {
namespace {

using test::expect_error;

void put_i32(std::vector<std::uint8_t>& h, std::size_t at, std::int32_t v, bool big) {
  for (int i = 0; i < 4; ++i) h[at + (big ? 3 - i : i)] = std::uint8_t(std::uint32_t(v) >> (8 * i));
}

std::vector<std::uint8_t> header(std::int32_t nx, std::int32_t ny, std::int32_t nz, std::int32_t mode,
                                 std::int32_t next = 0, bool big = false) {
  std::vector<std::uint8_t> h(1024, 0);
  put_i32(h, 0, nx, big);
  put_i32(h, 4, ny, big);
  put_i32(h, 8, nz, big);
  put_i32(h, 12, mode, big);
  put_i32(h, 92, next, big);
  std::memcpy(h.data() + 208, "MAP ", 4);
  h[212] = h[213] = big ? 0x11 : 0x44;
  return h;
}

TEST(MrcHeader, FieldsBothByteOrders) {
  for (bool big : {false, true}) {
    const auto h = header(5, 3, 7, 1, 128, big);
    const auto m = io::mrc::parse_header(h.data(), h.size(), 1024 + 128 + 5 * 3 * 7 * 2, "'x.mrc'");
    EXPECT_EQ(m.nx, 5);
    EXPECT_EQ(m.ny, 3);
    EXPECT_EQ(m.nz, 7);
    EXPECT_EQ(m.big_endian, big);
    EXPECT_EQ(m.dtype, DType::i16);
    EXPECT_EQ(m.data_offset, 1024u + 128u);
    EXPECT_EQ(m.frame_bytes, 5u * 3u * 2u);
    EXPECT_TRUE(m.has_map);
  }
  EXPECT_TRUE(io::mrc::is_mrc_head(header(1, 1, 1, 0).data(), 1024));
  auto no_map = header(1, 1, 1, 0);
  no_map[208] = 'X';
  EXPECT_FALSE(io::mrc::is_mrc_head(no_map.data(), 1024));
}

TEST(MrcHeader, ErrorsNameTheFileAndTheField) {
  const auto parse = [](const std::vector<std::uint8_t>& h, std::uint64_t size) {
    return io::mrc::parse_header(h.data(), h.size(), size, "'bad.mrc'");
  };
  expect_error<FormatError>([&] { parse(header(-4, 3, 2, 6), 1 << 20); }, {"'bad.mrc'", "NX", "-4"});
  expect_error<FormatError>([&] { parse(header(4, 0, 2, 6), 1 << 20); }, {"'bad.mrc'", "NY", "0"});
  expect_error<FormatError>([&] { parse(header(4, 3, -1, 6), 1 << 20); }, {"'bad.mrc'", "NZ", "-1"});
  expect_error<DTypeError>([&] { parse(header(4, 3, 2, 4), 1 << 20); }, {"'bad.mrc'", "MODE", "4", "complex float32"});
  expect_error<DTypeError>([&] { parse(header(4, 3, 2, 77), 1 << 20); }, {"MODE", "77", "unknown"});
  expect_error<FormatError>([&] { parse(header(4, 3, 2, 6, -8), 1 << 20); }, {"'bad.mrc'", "NEXT", "-8"});
  expect_error<FormatError>([&] { parse(header(4, 3, 2, 6, 5000), 2048); }, {"'bad.mrc'", "NEXT", "past the end"});
  expect_error<FormatError>([&] { parse(header(4, 3, 2, 6), 1024 + 47); },
                            {"'bad.mrc'", "NX 4, NY 3, NZ 2", "48 bytes", "1071", "truncated"});
  expect_error<FormatError>([&] { parse(header(INT32_MAX, INT32_MAX, INT32_MAX, 2), 4096); }, {"'bad.mrc'"});
  expect_error<FormatError>([&] { parse(header(4, 3, 2, 6), 1000); }, {"'bad.mrc'", "1024 bytes"});
  auto stamp = header(4, 3, 2, 6);
  stamp[212] = 0x17;
  expect_error<FormatError>([&] { parse(stamp, 1 << 20); }, {"machine stamp", "0x17"});
}

TEST(MrcReader, SampleWriterReadsBack) {
  for (DType t : {DType::u16, DType::i16, DType::i8, DType::f32}) {
    for (bool big : {false, true}) {
      sample::SampleSpec s;
      s.scan_rows = 3;
      s.scan_cols = 4;
      s.det_rows = 10;
      s.det_cols = 8;
      s.dtype = t;
      s.big_endian = big;
      const std::string path = test::temp_path(std::string(dtype_name(t)) + (big ? "_be" : "_le") + ".data");
      sample::write_sample_mrc(path, s, 256);
      io::SourceOptions o;
      o.scan_rows = 3;
      o.scan_cols = 4;
      const io::FileInfo fi = io::inspect(path, o);
      EXPECT_EQ(fi.reader, "mrc");
      EXPECT_EQ(fi.dtype, t);
      EXPECT_EQ(fi.shape.det_rows, 10u);
      EXPECT_EQ(fi.shape.det_cols, 8u);
      EXPECT_EQ(fi.frames, 12u);
      EXPECT_EQ(fi.byte_order, big && t != DType::i8 ? "big" : "little");
      ASSERT_EQ(fi.records.runs.size(), 1u);
      EXPECT_EQ(fi.records.runs[0].offset, 1024u + 256u);
      EXPECT_NE(fi.source_kind.find("FEI2"), std::string::npos);
      // Without "MAP " only format "mrc" reads it.
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(208);
      f.write("XXXX", 4);
      f.close();
      EXPECT_ANY_THROW(io::inspect(path, o));
      o.format = "mrc";
      EXPECT_EQ(io::inspect(path, o).reader, "mrc");
    }
  }
}

// A Direct Electron movie with its info.txt and scan-coordinates csv beside it (<id>_movie.mrc, <id>_info.txt,
// <id>_scan_coordinates.csv); returns the movie's path.
std::string write_de_custom(const std::string& name, std::int32_t frames, const std::string& size_x,
                            const std::string& size_y, const std::string& csv) {
  const std::string movie = test::temp_path(name + "_movie.mrc");
  const std::string id = movie.substr(0, movie.size() - std::string("_movie.mrc").size());
  std::vector<std::uint8_t> h = header(1, 1, frames, 0);
  h.resize(h.size() + std::size_t(frames), 1);
  std::ofstream(movie, std::ios::binary).write(reinterpret_cast<const char*>(h.data()), std::streamsize(h.size()));
  std::ofstream(id + "_info.txt") << "Scan - Enable = Enable\nScan - Size X = " << size_x << "\nScan - Size Y = "
                                  << size_y << "\nScan - Type = XY File\nScan - Repeats = 1\n";
  std::ofstream(id + "_scan_coordinates.csv") << csv;
  return movie;
}

TEST(MrcReader, DeCustomScanCountsVisitsExactly) {
  // 3 x 3 scan, 6 frames at (x,y) (0,0) (2,2) (1,0) (2,2) (0,2) (1,1): 5 positions scanned, (2,2) twice.
  const std::string movie = write_de_custom("visits", 6, "3", "3", "0,0\n2,2\n1,0\n2,2\n0,2\n1,1\n");
  const io::FileInfo fi = io::mrc::inspect_mrc(movie, io::SourceOptions{});
  const auto& c = fi.metadata.at("de_custom_scan");
  EXPECT_EQ(c.at("positions_listed").get<std::uint64_t>(), 6u);
  EXPECT_EQ(c.at("positions_never_scanned").get<std::uint64_t>(), 4u);
  EXPECT_EQ(c.at("positions_visited_more_than_once").get<std::uint64_t>(), 1u);
  EXPECT_EQ(c.at("most_visits").get<std::uint32_t>(), 2u);
  EXPECT_EQ(fi.sparse.positions, (std::vector<std::uint64_t>{0, 8, 1, 8, 6, 4}));
  EXPECT_EQ(fi.shape.scan_rows, 3u);
  EXPECT_EQ(fi.shape.scan_cols, 3u);
}

TEST(MrcReader, DeCustomScanOfAHugeStatedSizeAllocatesNothingForIt) {
  // The visits were counted in a vector of Scan - Size X x Y entries, a size read from a text file: 1e10 positions
  // were a 40 GB zeroed allocation, 9e18 a std::length_error (no typed error). Counted over the listed positions now.
  const std::string movie = write_de_custom("huge", 2, "100000", "100000", "5,7\n99999,99999\n");
  const io::FileInfo fi = io::mrc::inspect_mrc(movie, io::SourceOptions{});
  const auto& c = fi.metadata.at("de_custom_scan");
  EXPECT_EQ(c.at("positions_never_scanned").get<std::uint64_t>(), 10000000000ull - 2);
  EXPECT_EQ(c.at("most_visits").get<std::uint32_t>(), 1u);
  EXPECT_EQ(fi.sparse.positions, (std::vector<std::uint64_t>{7ull * 100000 + 5, 10000000000ull - 1}));
  EXPECT_EQ(fi.frames, 10000000000ull);
  // A stated scan beyond any memory: the typed error of the shape, naming it.
  const std::string over = write_de_custom("over", 1, "3000000000", "3000000000", "0,0\n");
  expect_error<Error>([&] { io::mrc::inspect_mrc(over, io::SourceOptions{}); }, {"3000000000x3000000000", "beyond any memory"});
}

}  // namespace
}  // namespace qgpu
