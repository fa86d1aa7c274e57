// The stream protocols' messages: CBOR (stream V2), JSON multipart (stream V1), MPX framing (Merlin TCP), read back
// from what our encoders write and from hand-made bytes of the specs, and every malformed form refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "core/error.hpp"
#include "io/hdf5/codec/bitshuffle_decode_host.hpp"
#include "io/hdf5/codec/bitshuffle_encode_host.hpp"
#include "live/protocol/cbor.hpp"
#include "live/protocol/frame_bytes.hpp"
#include "live/protocol/mpx.hpp"
#include "live/protocol/stream1.hpp"
#include "live/protocol/stream2.hpp"
#include "support/expect_error.hpp"

using namespace qgpu;
using namespace qgpu::live;

namespace {

cbor::Item parse(const std::vector<std::uint8_t>& b) { return cbor::parse(b.data(), b.size()); }

std::vector<std::uint16_t> ramp(std::size_t n) {
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::uint16_t((i * 37) % 1000);
  return v;
}

std::vector<std::uint8_t> bslz4(const std::vector<std::uint16_t>& frame) {
  io::codec::BitshuffleParams p;
  p.elem_size = 2;
  p.block_elems = 4096;
  return io::codec::encode_chunk(p, frame.size(), frame.data());
}

}  // namespace

TEST(Cbor, ReadsWhatTheWriterWrites) {
  cbor::Writer w;
  w.array(11);
  for (std::uint64_t v : {0ull, 23ull, 24ull, 255ull, 256ull, 65536ull, 1ull << 32, 1ull << 63}) w.uint(v);
  w.integer(-1).integer(-1000000);
  w.map(4).text("a").bytes("xyz", 3).text("f").float64(-2.5).text("t").tag(40).array(0).text("n").null();
  const cbor::Item it = parse(w.out());
  ASSERT_EQ(it.type, cbor::Type::array);
  ASSERT_EQ(it.items.size(), 11u);
  EXPECT_EQ(it.items[0].value, 0u);
  EXPECT_EQ(it.items[2].value, 24u);
  EXPECT_EQ(it.items[5].value, 65536u);
  EXPECT_EQ(it.items[6].value, 1ull << 32);
  EXPECT_EQ(it.items[7].value, 1ull << 63);
  EXPECT_EQ(it.items[8].integer("x"), -1);
  EXPECT_EQ(it.items[9].integer("x"), -1000000);
  const cbor::Item& m = it.items[10];
  ASSERT_NE(m.find("a"), nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.find("a")->data), 3), "xyz");
  EXPECT_EQ(m.find("f")->real, -2.5);
  ASSERT_NE(m.find("t")->untag(40), nullptr);
  EXPECT_EQ(m.find("n")->type, cbor::Type::null);
  EXPECT_EQ(m.find("missing"), nullptr);
}

TEST(Cbor, ReadsHalfAndSingleFloatsAndIndefiniteContainers) {
  // RFC 8949 appendix A: f9 3c 00 = 1.0, f9 c4 00 = -4.0, fa 47 c3 50 00 = 100000.0; 9f 01 02 ff = [_ 1, 2];
  // bf 61 61 01 ff = {_ "a": 1}
  const std::vector<std::uint8_t> b = {0x85, 0xf9, 0x3c, 0x00, 0xf9, 0xc4, 0x00, 0xfa, 0x47, 0xc3, 0x50, 0x00,
                                       0x9f, 0x01, 0x02, 0xff, 0xbf, 0x61, 0x61, 0x01, 0xff};
  const cbor::Item it = parse(b);
  EXPECT_EQ(it.items[0].real, 1.0);
  EXPECT_EQ(it.items[1].real, -4.0);
  EXPECT_EQ(it.items[2].real, 100000.0);
  EXPECT_EQ(it.items[3].items.size(), 2u);
  EXPECT_EQ(it.items[4].find("a")->value, 1u);
}

TEST(Cbor, RefusesMalformedMessagesByName) {
  using test::expect_error;
  expect_error<FormatError>([] { parse({0x82, 0x01}); }, {"array of 2 entries passes the end"});
  expect_error<FormatError>([] { parse({0x19, 0x01}); }, {"ends inside an item"});
  expect_error<FormatError>([] { parse({0x5a, 0xff, 0xff, 0xff, 0xff, 0x00}); }, {"passes the end"});
  expect_error<FormatError>([] { parse({0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); },
                            {"array", "passes the end"});
  expect_error<FormatError>([] { parse({0x01, 0x02}); }, {"after the message's item"});
  expect_error<FormatError>([] { parse({0x5f, 0x41, 0x00, 0xff}); }, {"indefinite-length string"});
  expect_error<FormatError>([] { parse({0x1c}); }, {"reserved"});
  expect_error<FormatError>([] { parse({0xff}); }, {"unexpected break"});
  expect_error<FormatError>([] { parse({0x9f, 0x01}); }, {"without its break"});
  std::vector<std::uint8_t> deep(100, 0x81);
  deep.push_back(0x00);
  expect_error<FormatError>([&] { parse(deep); }, {"nesting deeper"});
}

TEST(Stream2, ImageMessagesCarryTheChunkUntouched) {
  const auto frame = ramp(20 * 24);
  const auto chunk = bslz4(frame);
  const auto msg = stream2::encode_image(3, 17, 20, 24, DType::u16, "bslz4", chunk.data(), chunk.size());
  ASSERT_GE(msg.size(), 3u);
  EXPECT_EQ(msg[0], 0xd9);
  EXPECT_EQ(msg[1], 0xd9);
  EXPECT_EQ(msg[2], 0xf7);
  const stream2::Message m = stream2::decode(msg.data(), msg.size());
  EXPECT_EQ(m.kind, stream2::Kind::image);
  EXPECT_EQ(m.series_id, 3u);
  EXPECT_EQ(m.image.image_id, 17u);
  EXPECT_EQ(m.image.rows, 20u);
  EXPECT_EQ(m.image.cols, 24u);
  EXPECT_EQ(m.image.dtype, DType::u16);
  EXPECT_EQ(m.image.compression, "bslz4");
  EXPECT_EQ(m.image.channel, "threshold_1");
  ASSERT_EQ(m.image.size, chunk.size());
  EXPECT_EQ(std::memcmp(m.image.data, chunk.data(), chunk.size()), 0);
  EXPECT_GE(m.image.data, msg.data());  // a view into the message, not a copy
  EXPECT_LE(m.image.data + m.image.size, msg.data() + msg.size());
  // plain typed array
  const auto plain = stream2::encode_image(3, 2, 20, 24, DType::u16, "",
                                           reinterpret_cast<const std::uint8_t*>(frame.data()), frame.size() * 2);
  const stream2::Message p = stream2::decode(plain.data(), plain.size());
  EXPECT_EQ(p.image.compression, "");
  EXPECT_EQ(std::memcmp(p.image.data, frame.data(), frame.size() * 2), 0);
}

TEST(Stream2, StartGivesSizesEnergyMaskAndScanShape) {
  SeriesInfo info;
  info.det_rows = 4;
  info.det_cols = 5;
  info.dtype = DType::u32;
  info.frames = 12;
  info.scan_rows = 3;
  info.scan_cols = 4;
  std::vector<std::uint32_t> mask(20, 0);
  mask[7] = 1;
  mask[19] = 4;
  const auto msg = stream2::encode_start(9, info, 200000, mask);
  const stream2::Message m = stream2::decode(msg.data(), msg.size());
  EXPECT_EQ(m.kind, stream2::Kind::start);
  EXPECT_EQ(m.start.protocol, "dectris-v2");
  EXPECT_EQ(m.start.series_id, "9");
  EXPECT_EQ(m.start.det_rows, 4u);
  EXPECT_EQ(m.start.det_cols, 5u);
  EXPECT_EQ(m.start.dtype, DType::u32);
  EXPECT_EQ(m.start.frames, 12u);
  EXPECT_EQ(m.start.scan_rows, 3u);
  EXPECT_EQ(m.start.scan_cols, 4u);
  EXPECT_EQ(m.start.bad_pixels, (std::vector<std::uint32_t>{7, 19}));
  EXPECT_DOUBLE_EQ(m.start.calibration["energy_kev"].get<double>(), 200.0);
  EXPECT_NE(m.start.calibration_detail["energy_kev"]["source"].get<std::string>().find("incident_energy"),
            std::string::npos);
  const auto end = stream2::encode_end(9);
  EXPECT_EQ(stream2::decode(end.data(), end.size()).kind, stream2::Kind::end);
}

TEST(Stream2, RefusesWhatItCannotReadByName) {
  using test::expect_error;
  const auto frame = ramp(6);
  const auto chunk = bslz4(frame);
  auto msg = stream2::encode_image(1, 0, 2, 3, DType::u16, "bslz4", chunk.data(), chunk.size());
  std::vector<std::uint8_t> no_tag(msg.begin() + 3, msg.end());
  expect_error<FormatError>([&] { stream2::decode(no_tag.data(), no_tag.size()); }, {"self-describe"});
  expect_error<FormatError>([&] { stream2::decode(msg.data(), msg.size(), "threshold_2"); },
                            {"no channel 'threshold_2'", "threshold_1"});
  // dims that disagree with the decoded size
  const auto wrong = stream2::encode_image(1, 0, 3, 3, DType::u16, "bslz4", chunk.data(), chunk.size());
  expect_error<FormatError>([&] { stream2::decode(wrong.data(), wrong.size()); }, {"holds 12 bytes", "are 18"});
  // a float32 image (tag 85)
  cbor::Writer w;
  w.tag(cbor::kSelfDescribe).map(5).text("type").text("image").text("series_id").uint(1).text("image_id").uint(0);
  w.text("series_unique_id").text("x").text("data").map(1).text("c");
  const float f[2] = {1, 2};
  w.tag(40).array(2).array(2).uint(1).uint(2).tag(85).bytes(f, 8);
  expect_error<FormatError>([&] { stream2::decode(w.out().data(), w.out().size()); }, {"only unsigned"});
  cbor::Writer t;
  t.tag(cbor::kSelfDescribe).map(2).text("type").text("status").text("series_id").uint(1);
  expect_error<FormatError>([&] { stream2::decode(t.out().data(), t.out().size()); }, {"type 'status'"});
  // truncated message
  expect_error<FormatError>([&] { stream2::decode(msg.data(), msg.size() - 5); }, {"CBOR"});
}

TEST(Stream1, HeaderImageAndEndRoundTrip) {
  SeriesInfo info;
  info.det_rows = 20;
  info.det_cols = 24;
  info.dtype = DType::u16;
  info.frames = 48;
  const auto to_parts = [](const std::vector<std::vector<std::uint8_t>>& v) {
    std::vector<stream1::Part> p;
    for (const auto& x : v) p.push_back({x.data(), x.size()});
    return p;
  };
  const auto hdr = stream1::encode_header(5, info, 300000);
  const stream1::Message h = stream1::decode(to_parts(hdr));
  EXPECT_EQ(h.kind, stream1::Kind::header);
  EXPECT_EQ(h.series, 5u);
  EXPECT_EQ(h.start.det_rows, 20u);
  EXPECT_EQ(h.start.det_cols, 24u);
  EXPECT_EQ(h.start.frames, 48u);  // trigger_mode exte: ntrigger
  EXPECT_DOUBLE_EQ(h.start.calibration["energy_kev"].get<double>(), 300.0);
  const auto frame = ramp(20 * 24);
  const auto chunk = bslz4(frame);
  const auto img = stream1::encode_image(5, 7, 20, 24, DType::u16, "bs16-lz4<", chunk.data(), chunk.size());
  ASSERT_EQ(img.size(), 4u);
  const stream1::Message m = stream1::decode(to_parts(img));
  EXPECT_EQ(m.kind, stream1::Kind::image);
  EXPECT_EQ(m.frame, 7u);
  EXPECT_EQ(m.rows, 20u);  // shape is [x, y] on the wire
  EXPECT_EQ(m.cols, 24u);
  EXPECT_EQ(m.blob.size, chunk.size());
  EXPECT_EQ(stream1::decode(to_parts(stream1::encode_end(5))).kind, stream1::Kind::end);
  // errors
  const auto bad_enc = stream1::encode_image(5, 7, 20, 24, DType::u16, "bs32-lz4<", chunk.data(), chunk.size());
  test::expect_error<FormatError>([&] { stream1::decode(to_parts(bad_enc)); }, {"does not match type uint16"});
  const auto bad_shape = stream1::encode_image(5, 7, 24, 24, DType::u16, "bs16-lz4<", chunk.data(), chunk.size());
  test::expect_error<FormatError>([&] { stream1::decode(to_parts(bad_shape)); }, {"holds 960 bytes"});
  const std::string junk = "{\"htype\":\"dfoo-1.0\"}";
  test::expect_error<FormatError>(
      [&] { stream1::decode({{reinterpret_cast<const std::uint8_t*>(junk.data()), junk.size()}}); },
      {"htype 'dfoo-1.0'"});
  const std::string notjson = "{not json";
  test::expect_error<FormatError>(
      [&] { stream1::decode({{reinterpret_cast<const std::uint8_t*>(notjson.data()), notjson.size()}}); },
      {"not a JSON object"});
  // A float or negative shape (found by fuzz_live_stream: 3.3e38 converted to an integer was undefined) is refused.
  for (const char* shape : {"[3.33e38, 20]", "[24, -20]", "[24.5, 20]", "7"}) {
    const std::string d = std::string("{\"htype\":\"dimage_d-1.0\",\"shape\":") + shape +
                          ",\"type\":\"uint16\",\"encoding\":\"<\"}";
    std::vector<stream1::Part> parts = to_parts(img);
    parts[1] = {reinterpret_cast<const std::uint8_t*>(d.data()), d.size()};
    test::expect_error<FormatError>([&] { stream1::decode(parts); }, {"dimage_d field 'shape'"});
  }
}

TEST(Mpx, PrefixLengthCountsTheCommaAndBadPrefixesAreNamed) {
  const std::string payload = "HDR,\tabc";
  const auto m = mpx::message(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size());
  EXPECT_EQ(std::string(m.begin(), m.begin() + 15), "MPX,0000000009,");
  EXPECT_EQ(mpx::payload_bytes(m.data()), payload.size());
  const auto bad = [](const char* p) { return mpx::payload_bytes(reinterpret_cast<const std::uint8_t*>(p)); };
  test::expect_error<FormatError>([&] { bad("MPY,0000000009,"); }, {"'MPX,'"});
  test::expect_error<FormatError>([&] { bad("MPX,00000a0009,"); }, {"10 decimal digits"});
  test::expect_error<FormatError>([&] { bad("MPX,0000000009;"); }, {"no ','"});
  test::expect_error<FormatError>([&] { bad("MPX,9999999999,"); }, {"at most"});
  test::expect_error<FormatError>([&] { bad("MPX,0000000001,"); }, {"no payload"});
}

TEST(FrameBytes, Lz4FramingRoundTripsAndChecksItsBlocks) {
  std::vector<std::uint8_t> plain(10000);
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = std::uint8_t(i % 7 == 0 ? i : 3);
  const auto enc = frame_bytes::encode_lz4(plain.data(), plain.size(), 4096);
  EXPECT_EQ(frame_bytes::decoded_size(enc.data()), plain.size());
  std::vector<std::uint8_t> out(plain.size());
  frame_bytes::decode_lz4(enc.data(), enc.size(), out.data(), out.size());
  EXPECT_EQ(out, plain);
  test::expect_error<FormatError>([&] { frame_bytes::decode_lz4(enc.data(), enc.size() - 3, out.data(), out.size()); },
                                  {"lz4 frame"});
  std::vector<std::uint8_t> small(100);
  test::expect_error<FormatError>([&] { frame_bytes::decode_lz4(enc.data(), enc.size(), small.data(), small.size()); },
                                  {"decodes to 10000 bytes"});
}
