// Merlin frame and acquisition headers: every field parsed from the writer's and a real header, and a clear
// FormatError naming the file, frame and field for each malformed one; the host decoder on hand-built payloads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/merlin/mib_decode.hpp"
#include "io/merlin/mib_header.hpp"
#include "io/merlin/mib_writer.hpp"
#include "merlin_files.hpp"
#include "support/expect_error.hpp"

using namespace qgpu;
using namespace qgpu::io::merlin;

namespace {

// The first frame header of the real file Quad_1_Frame_CounterDepth_12_Rows_256.mib (Merlin 0.77), text part.
const std::string kRealQuad =
    "MQ1,000001,00768,04,0512,0512,U16,   2x2,0F,2021-04-15 14:44:43.100924,0.001000,0,0,0,2.000000E+0,"
    "5.110000E+2,0.000000E+0,0.000000E+0,0.000000E+0,0.000000E+0,0.000000E+0,0.000000E+0,"
    "3RX,011,511,000,000,000,000,000,000,175,010,200,125,100,100,093,100,099,030,128,004,255,140,128,191,179,511,511,"
    "3RX,011,511,000,000,000,000,000,000,175,010,200,125,100,100,093,100,099,030,128,004,255,140,128,191,179,511,511,"
    "3RX,011,511,000,000,000,000,000,000,175,010,200,125,100,100,093,100,099,030,128,004,255,140,128,191,179,511,511,"
    "3RX,011,511,000,000,000,000,000,000,175,010,200,125,100,100,093,100,099,030,128,004,255,140,128,191,179,511,511,"
    "MQ1A,2021-04-15T13:44:43.100924481Z,1000000ns,12,";

std::string padded(std::string text, std::size_t size) {
  text.resize(size, '\0');
  return text;
}

FrameHeader parse(const std::string& bytes, std::uint64_t frame = 3) {
  return parse_frame_header(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
                            Where{"acq.mib", frame, 1000});
}

PixelFormat format_of(const std::string& bytes, std::uint32_t hdr_depth = 0) {
  return pixel_format(parse(bytes), hdr_depth, Where{"acq.mib", 3, 1000});
}

// The real quad header with field `index` replaced.
std::string with_field(std::string text, std::size_t index, const std::string& value) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < index; ++i) start = text.find(',', start) + 1;
  const std::size_t end = text.find(',', start);
  return text.replace(start, end - start, value);
}

AcquisitionHeader hdr(const std::string& text) {
  return parse_acquisition_header(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), "acq.hdr");
}

}  // namespace

TEST(MerlinHeader, RealQuadHeaderEveryField) {
  const FrameHeader h = parse(padded(kRealQuad, 768));
  EXPECT_EQ(h.sequence, 1u);
  EXPECT_EQ(h.header_bytes, 768u);
  EXPECT_EQ(h.chips, 4u);
  EXPECT_EQ(h.width, 512u);
  EXPECT_EQ(h.height, 512u);
  EXPECT_EQ(h.pixel_type, PixelType::U16);
  EXPECT_EQ(h.layout, Layout::L2x2);
  EXPECT_EQ(h.chip_select, 0x0fu);
  EXPECT_EQ(h.timestamp, "2021-04-15 14:44:43.100924");
  EXPECT_EQ(h.shutter_s, 0.001);
  EXPECT_EQ(h.counter, 0);
  ASSERT_EQ(h.thresholds_kev.size(), 8u);
  EXPECT_EQ(h.thresholds_kev[0], 2.0);
  EXPECT_EQ(h.thresholds_kev[1], 511.0);
  EXPECT_EQ(h.dac_blocks, 4u);
  EXPECT_EQ(h.chip_type, "3RX");
  EXPECT_TRUE(h.mq1a);
  EXPECT_EQ(h.timestamp_ns, "2021-04-15T13:44:43.100924481Z");
  EXPECT_EQ(h.exposure_ns, 1000000u);
  EXPECT_EQ(h.counter_depth, 12u);
  const PixelFormat f = pixel_format(h, 0, Where{"acq.mib", 0, 0});
  EXPECT_EQ(f.rows, 512u);
  EXPECT_EQ(f.cols, 512u);
  EXPECT_EQ(f.payload_bytes, 524288u);  // 525,056-byte frames of the real file minus the 768-byte header
  EXPECT_EQ(f.out_dtype, DType::u16);
  EXPECT_FALSE(f.raw);
}

TEST(MerlinHeader, RealQuadRawGeometry) {
  std::string t = with_field(with_field(with_field(kRealQuad, 4, "1024"), 5, "0256"), 6, "R64");
  t.replace(t.size() - 3, 2, "1,");  // MQ1A counter depth 1
  t.pop_back();
  const PixelFormat f = format_of(padded(t, 768));
  EXPECT_TRUE(f.raw);
  EXPECT_EQ(f.counter_depth, 1u);
  EXPECT_EQ(f.chip, 256u);
  EXPECT_EQ(f.rows, 512u);
  EXPECT_EQ(f.payload_bytes, 32768u);  // 33,536-byte frames of the real quad RAW file minus 768
  EXPECT_EQ(f.out_dtype, DType::u8);
}

TEST(MerlinHeader, WriterHeadersParseBackForEveryForm) {
  for (std::uint32_t d : {1u, 6u, 12u, 24u})
    for (bool quad : {false, true})
      for (bool raw : {false, true}) {
        MibWriteSpec s;
        s.counter_depth = d;
        s.quad = quad;
        s.raw = raw;
        s.rows = s.cols = quad ? 512 : 256;
        const FrameHeader w = writer_header(s, 42);
        const FrameHeader h = parse(format_frame_header(w));
        EXPECT_EQ(h.sequence, 42u);
        EXPECT_EQ(h.header_bytes, quad ? 768u : 384u);
        EXPECT_EQ(h.width, w.width);
        EXPECT_EQ(h.height, w.height);
        EXPECT_EQ(h.pixel_type, w.pixel_type);
        EXPECT_EQ(h.layout, w.layout);
        EXPECT_EQ(h.dac_blocks, quad ? 4u : 1u);
        EXPECT_EQ(h.thresholds_kev, w.thresholds_kev);
        EXPECT_EQ(h.timestamp, w.timestamp);
        EXPECT_EQ(h.timestamp_ns, w.timestamp_ns);
        EXPECT_EQ(h.counter_depth, d);
        const PixelFormat f = pixel_format(h, 0, Where{"w.mib", 0, 0});
        EXPECT_EQ(f.rows, s.rows);
        EXPECT_EQ(f.cols, s.cols);
        EXPECT_EQ(f.out_dtype, d <= 6 ? DType::u8 : d == 12 ? DType::u16 : DType::u32);
      }
}

TEST(MerlinHeader, TruncatedHeaderNamesFileFrameAndSizes) {
  const std::string h = padded(kRealQuad, 768).substr(0, 500);
  test::expect_error<FormatError>([&] { parse(h); },
                                  {"'acq.mib' frame 3 (byte 1000)", "truncated", "field 2 (header size)", "768", "500"});
  test::expect_error<FormatError>([&] { parse("MQ1,00"); }, {"acq.mib", "frame 3", "truncated"});
  test::expect_error<FormatError>([&] { parse("MQ2,000001,00384,"); }, {"frame 3", "does not start with 'MQ1,'"});
}

TEST(MerlinHeader, BadCounterDepth) {
  std::string t = kRealQuad;
  t.replace(t.size() - 3, 2, "7,");
  t.pop_back();
  test::expect_error<FormatError>([&] { parse(padded(t, 768)); }, {"frame 3", "'7'", "counter depth", "1, 6, 12 or 24"});
  // .hdr and MQ1A disagree
  test::expect_error<FormatError>([&] { format_of(padded(kRealQuad, 768), 24); },
                                  {"frame 3", "counter depth 12 (MQ1A)", "Counter Depth 24"});
  // pixel type and counter depth disagree
  std::string u32 = with_field(kRealQuad, 6, "U32");
  test::expect_error<FormatError>([&] { format_of(padded(u32, 768)); }, {"pixel type U32", "24-bit", "is 12"});
}

TEST(MerlinHeader, WrongHeaderSize) {
  // A quad header (679 bytes of text) that says it is 384 bytes long: the text runs past its end.
  const std::string t = with_field(kRealQuad, 2, "00384");
  test::expect_error<FormatError>([&] { parse(padded(t, 768)); }, {"frame 3", "header size disagrees", "384"});
  test::expect_error<FormatError>([&] { parse(padded(with_field(kRealQuad, 2, "00032"), 768)); },
                                  {"field 2 (header size)", "'00032'", "out of range"});
  test::expect_error<FormatError>([&] { parse(padded(with_field(kRealQuad, 2, "0x300"), 768)); },
                                  {"field 2 (header size)", "not a decimal number"});
}

TEST(MerlinHeader, UnknownPixelTypeLayoutAndChips) {
  test::expect_error<FormatError>([&] { parse(padded(with_field(kRealQuad, 6, "U12"), 768)); },
                                  {"'acq.mib' frame 3", "field 6 (pixel type)", "'U12'"});
  test::expect_error<FormatError>([&] { parse(padded(with_field(kRealQuad, 7, "   3x3"), 768)); },
                                  {"field 7 (layout)", "'   3x3'"});
  test::expect_error<FormatError>([&] { format_of(padded(with_field(kRealQuad, 3, "01"), 768)); },
                                  {"field 7 (layout) '2x2' means 4 chips", "field 3 (chips) says 1"});
  test::expect_error<FormatError>([&] { parse(padded(with_field(kRealQuad, 4, "05x2"), 768)); },
                                  {"field 4 (width)", "'05x2'"});
  test::expect_error<FormatError>([&] { parse(padded(with_field(kRealQuad, 1, "000000"), 768)); },
                                  {"field 1 (sequence number)", "out of range"});
  test::expect_error<FormatError>([&] { parse(padded(with_field(kRealQuad, 8, "0G"), 768)); },
                                  {"field 8 (chip select)", "hex"});
  test::expect_error<DTypeError>([&] { format_of(padded(with_field(kRealQuad, 6, "U64"), 768)); }, {"U64", "frame 3"});
  std::string bad = padded(kRealQuad, 768);
  bad[40] = '\x01';
  test::expect_error<FormatError>([&] { parse(bad); }, {"frame 3", "byte 40 is 0x01"});
}

TEST(MerlinHeader, SizesThatOverflowOrExceedTheFrameLimit) {
  const std::string big = with_field(with_field(kRealQuad, 4, "1048576"), 5, "1048576");
  test::expect_error<FormatError>([&] { format_of(padded(big, 768)); }, {"frame 3", "1048576x1048576", "larger than"});
  test::expect_error<FormatError>([&] { parse(padded(with_field(kRealQuad, 4, "99999999999999999999"), 768)); },
                                  {"field 4 (width)", "not a decimal number"});
}

TEST(MerlinHeader, RawFramesNeedACounterDepthAndAKnownGeometry) {
  std::string t = with_field(with_field(with_field(kRealQuad, 4, "1024"), 5, "0256"), 6, "R64");
  const std::string no_mq1a = padded(t.substr(0, t.find("MQ1A,")), 768);
  test::expect_error<FormatError>([&] { format_of(no_mq1a); }, {"frame 3", "raw (R64)", "counter depth"});
  EXPECT_EQ(format_of(no_mq1a, 6).payload_bytes, 262144u);  // the .hdr gives it
  const std::string odd = padded(with_field(no_mq1a.substr(0, no_mq1a.find('\0')), 4, "1000"), 768);
  test::expect_error<FormatError>([&] { format_of(odd, 12); }, {"raw quad frame 1000x256", "width = 4 x height"});
  const std::string nx1 = padded(with_field(no_mq1a.substr(0, no_mq1a.find('\0')), 7, "4x1"), 768);
  test::expect_error<FormatError>([&] { format_of(nx1, 12); }, {"raw (R64) frames of layout Nx1", "not supported"});
}

TEST(MerlinHeader, AcquisitionHeaderKeysAndErrors) {
  const std::string base =
      "HDR,\t\r\nAssembly Size (NX1, 2X2):\t   2x2\r\nCounter Depth (number):\t12\r\nGap Fill Mode:\tNone\r\n"
      "Frames in Acquisition (Number):\t65536\r\nFrames per Trigger (Number):\t256\r\n"
      "Humidity (%):\tBoard Humidity 12 \xb5g\r\nSoftware Version:\t0.77\r\n";
  const AcquisitionHeader h = hdr(base + "End\t        ");
  EXPECT_EQ(h.frames_in_acquisition, 65536u);
  EXPECT_EQ(h.frames_per_trigger, 256u);
  EXPECT_EQ(h.counter_depth, 12u);
  EXPECT_EQ(h.assembly_size, "2x2");
  EXPECT_EQ(h.gap_fill_mode, "None");
  EXPECT_EQ(h.software_version, "0.77");
  EXPECT_FALSE(h.scan_x.has_value());
  ASSERT_NE(h.find("Humidity (%)"), nullptr);
  EXPECT_EQ(*h.find("Humidity (%)"), "Board Humidity 12 \xc2\xb5g");  // latin-1 micro sign as UTF-8
  const AcquisitionHeader xy = hdr(base + "ScanX:\t256\r\nScanY:\t128\r\nEnd\t");
  EXPECT_EQ(xy.scan_x, 256u);
  EXPECT_EQ(xy.scan_y, 128u);
  test::expect_error<FormatError>([&] { hdr(base + "ScanX:\t256\r\nEnd\t"); }, {"'acq.hdr'", "ScanX without ScanY"});
  test::expect_error<FormatError>([&] { hdr("HDR,\t\r\nCounter Depth (number):\t5\r\n"); },
                                  {"'acq.hdr'", "Counter Depth 5"});
  test::expect_error<FormatError>([&] { hdr("HDR,\t\r\nFrames in Acquisition (Number):\tmany\r\n"); },
                                  {"'Frames in Acquisition (Number)'", "'many'", "not a whole number"});
  test::expect_error<FormatError>([&] { hdr("HDR,\t\r\nCounter Depth 12\r\n"); }, {"line 2", "Key:<tab>value"});
  test::expect_error<FormatError>([&] { hdr("MQ1,\r\n"); }, {"'acq.hdr'", "HDR,"});
  // Frames per Trigger 0 (continuous acquisitions) means "not stated"
  EXPECT_FALSE(hdr("HDR,\t\r\nFrames per Trigger (Number):\t0\r\n").frames_per_trigger.has_value());
}

TEST(MerlinDecode, HandBuiltPayloads) {
  PixelFormat f;
  // Raw 12-bit single chip 1 x 8: >u2 groups of 4 reversed.
  f.raw = true, f.counter_depth = 12, f.rows = 1, f.cols = 8, f.out_dtype = DType::u16, f.payload_bytes = 16;
  const std::vector<std::uint8_t> p12 = {0, 1, 0, 2, 0, 3, 0x0f, 0xff, 0, 5, 0, 6, 0, 7, 1, 0};
  std::vector<std::uint16_t> o16(8);
  decode_frame_host(f, p12.data(), o16.data());
  EXPECT_EQ(o16, (std::vector<std::uint16_t>{4095, 3, 2, 1, 256, 7, 6, 5}));
  // Raw 6-bit: u8 groups of 8 reversed.
  f.counter_depth = 6, f.out_dtype = DType::u8, f.payload_bytes = 8;
  const std::vector<std::uint8_t> p6 = {1, 2, 3, 4, 5, 6, 7, 63};
  std::vector<std::uint8_t> o8(8);
  decode_frame_host(f, p6.data(), o8.data());
  EXPECT_EQ(o8, (std::vector<std::uint8_t>{63, 7, 6, 5, 4, 3, 2, 1}));
  // Raw 1-bit 1 x 64: the 8 bytes reversed, bit k of a byte = pixel k of its 8.
  f.counter_depth = 1, f.cols = 64;
  std::vector<std::uint8_t> p1(8, 0);
  p1[7] = 0x01;  // pixel 0
  p1[6] = 0x02;  // pixel 9
  p1[0] = 0x80;  // pixel 63
  std::vector<std::uint8_t> o1(64);
  decode_frame_host(f, p1.data(), o1.data());
  std::vector<std::uint8_t> want(64, 0);
  want[0] = want[9] = want[63] = 1;
  EXPECT_EQ(o1, want);
  // Raw 24-bit 1 x 4: two 12-bit images, the first the high bits.
  f.counter_depth = 24, f.cols = 4, f.out_dtype = DType::u32, f.payload_bytes = 16;
  const std::vector<std::uint8_t> p24 = {0, 0, 0, 0, 0, 0, 0, 1, /* low: */ 0, 9, 0, 0, 0, 0, 0x0f, 0xff};
  std::vector<std::uint32_t> o32(4);
  decode_frame_host(f, p24.data(), o32.data());
  EXPECT_EQ(o32, (std::vector<std::uint32_t>{(1u << 12) + 4095, 0, 0, 9}));
  // Binary U16 and U32 are big-endian; flip_rows reverses the rows.
  PixelFormat b;
  b.stored = PixelType::U16, b.rows = 2, b.cols = 1, b.out_dtype = DType::u16, b.payload_bytes = 4;
  const std::vector<std::uint8_t> pb = {0x08, 0xbf, 0x00, 0x01};
  std::vector<std::uint16_t> ob(2);
  decode_frame_host(b, pb.data(), ob.data());
  EXPECT_EQ(ob, (std::vector<std::uint16_t>{2239, 1}));
  b.flip_rows = true;
  decode_frame_host(b, pb.data(), ob.data());
  EXPECT_EQ(ob, (std::vector<std::uint16_t>{1, 2239}));
}

TEST(MerlinDecode, QuadRawAssembly) {
  // Chip side 4, 12-bit: raw image 4 x 16 = [chip 4 | chip 3 | chip 2 | chip 1]; value = raw index, stored with
  // the groups of 4 reversed.
  PixelFormat f;
  f.raw = true, f.counter_depth = 12, f.chips = 4, f.layout = Layout::L2x2, f.chip = 4, f.rows = f.cols = 8;
  f.out_dtype = DType::u16, f.payload_bytes = 128;
  std::vector<std::uint8_t> p(128);
  for (std::uint32_t i = 0; i < 64; ++i) {
    const std::uint32_t j = (i & ~3u) + 3 - (i & 3u);  // where raw pixel i is stored
    p[2 * j] = 0, p[2 * j + 1] = std::uint8_t(i);
  }
  std::vector<std::uint16_t> o(64);
  decode_frame_host(f, p.data(), o.data());
  auto at = [&](int r, int c) { return o[r * 8 + c]; };
  EXPECT_EQ(at(0, 0), 12);       // chip 1 (raw cols 12..15), row 0
  EXPECT_EQ(at(0, 4), 8);        // chip 2 (raw cols 8..11)
  EXPECT_EQ(at(3, 3), 3 * 16 + 15);
  EXPECT_EQ(at(7, 0), 7);        // chip 3 flipped: bottom-left = raw row 0, col 7
  EXPECT_EQ(at(4, 3), 3 * 16 + 4);
  EXPECT_EQ(at(7, 7), 0);        // chip 4 flipped: bottom-right = raw row 0, col 0
  EXPECT_EQ(at(4, 4), 3 * 16 + 3);
  // flip_rows: rosettasciio's orientation, the rows reversed.
  PixelFormat fl = f;
  fl.flip_rows = true;
  std::vector<std::uint16_t> flipped(64);
  decode_frame_host(fl, p.data(), flipped.data());
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) EXPECT_EQ(flipped[r * 8 + c], at(7 - r, c));
  // 2x2G: a zero cross of two rows and columns between the chips, the chips unchanged.
  f.layout = Layout::L2x2G, f.rows = f.cols = 10;
  std::vector<std::uint16_t> g(100);
  decode_frame_host(f, p.data(), g.data());
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 10; ++c) {
      if (r == 4 || r == 5 || c == 4 || c == 5) {
        EXPECT_EQ(g[r * 10 + c], 0);
      } else {
        EXPECT_EQ(g[r * 10 + c], at(r > 5 ? r - 2 : r, c > 5 ? c - 2 : c));
      }
    }
}

TEST(MerlinDecode, EncodeDecodeRoundTripEveryForm) {
  for (std::uint32_t d : {1u, 6u, 12u, 24u})
    for (bool quad : {false, true})
      for (bool raw : {false, true})
        for (bool gap : {false, true}) {
          if (gap && !quad) continue;
          MibWriteSpec s;
          s.counter_depth = d, s.quad = quad, s.raw = raw, s.gap = gap;
          s.rows = s.cols = quad ? (gap ? 130 : 128) : 64;
          const PixelFormat f = writer_format(s);
          std::vector<std::uint8_t> frame(f.frame_bytes_out()), back(f.frame_bytes_out()), payload(f.payload_bytes);
          test::merlin_fill(f, 3, 1, frame.data());
          encode_frame_host(f, frame.data(), payload.data());
          decode_frame_host(f, payload.data(), back.data());
          EXPECT_EQ(frame, back) << "depth " << d << " quad " << quad << " raw " << raw << " gap " << gap;
        }
}
