#include "live/protocol/stream2.hpp"

#include <algorithm>
#include <cstring>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "io/calibration.hpp"
#include "io/hdf5/codec/bitshuffle_decode_host.hpp"
#include "live/protocol/cbor.hpp"
#include "live/protocol/frame_bytes.hpp"

namespace qgpu::live::stream2 {

namespace {

constexpr std::uint64_t kMultiDimRowMajor = 40;
constexpr std::uint64_t kDectrisCompression = 56500;

[[noreturn]] void bad(const std::string& why) { throw FormatError("DECTRIS stream V2 message: " + why); }

const cbor::Item& field(const cbor::Item& map, const char* key) {
  const cbor::Item* v = map.find(key);
  if (!v) bad(std::string("no '") + key + "' field");
  return *v;
}

// Typed-array tag (RFC 8746) -> element dtype; only the little-endian unsigned integers a detector sends.
DType typed_array_dtype(std::uint64_t tag) {
  switch (tag) {
    case 64: return DType::u8;
    case 69: return DType::u16;
    case 70: return DType::u32;
    default: break;
  }
  bad("image typed array tag " + std::to_string(tag) +
      " (only unsigned 8/16/32-bit little-endian images, tags 64, 69, 70, are read)");
}

DType dtype_from_name(const std::string& s) {
  if (s == "uint8") return DType::u8;
  if (s == "uint16") return DType::u16;
  if (s == "uint32") return DType::u32;
  bad("image_dtype '" + s + "' (uint8, uint16 or uint32 expected)");
}

// A multi-dimensional array item: dims, typed-array tag and its (possibly compressed) bytes.
struct Array2D {
  std::size_t rows = 0, cols = 0;
  std::uint64_t tag = 0;
  std::string compression;
  std::size_t elem_size = 0;
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

// `what` names the array in errors, built only when one is raised (a message's fast path allocates nothing for it).
template <class What> Array2D multidim_impl(const cbor::Item& it, const What& what) {
  const cbor::Item* a = it.untag(kMultiDimRowMajor);
  if (!a || a->type != cbor::Type::array || a->items.size() != 2)
    bad(what() + " is not a row-major multi-dimensional array (tag 40 [[rows, cols], typed array])");
  const cbor::Item& dims = a->items[0];
  if (dims.type != cbor::Type::array || dims.items.size() != 2) bad(what() + " dimensions are not [rows, cols]");
  const auto uint_of = [&](const cbor::Item& v, const char* name) {
    return v.type == cbor::Type::uint ? v.value : v.unsigned_integer(what() + name);
  };
  Array2D r;
  r.rows = std::size_t(uint_of(dims.items[0], " rows"));
  r.cols = std::size_t(uint_of(dims.items[1], " cols"));
  const cbor::Item& ta = a->items[1];
  if (ta.type != cbor::Type::tag || ta.value < 64 || ta.value > 87 || ta.items.empty())
    bad(what() + " holds no typed array (tags 64..87)");
  r.tag = ta.value;
  r.elem_size = std::size_t(1) << (((ta.value >> 4) & 1) + (ta.value & 3));
  const cbor::Item& content = ta.items[0];
  if (const cbor::Item* c = content.untag(kDectrisCompression)) {
    if (c->type != cbor::Type::array || c->items.size() != 3 || !c->items[0].is_text() ||
        c->items[2].type != cbor::Type::bytes)
      bad(what() + ": compression tag 56500 is not [algorithm, element size, bytes]");
    const std::string_view algo = c->items[0].text();
    if (algo == "bslz4") r.compression = "bslz4";
    else if (algo == "lz4") r.compression = "lz4";
    else bad(what() + ": compression '" + io::json_safe(std::string(algo)) + "' (bslz4 and lz4 are read)");
    if (r.compression == "bslz4" && uint_of(c->items[1], " element size") != r.elem_size)
      bad(what() + ": bslz4 element size " + std::to_string(c->items[1].value) + " differs from the typed array's " +
          std::to_string(r.elem_size));
    r.data = c->items[2].data;
    r.size = c->items[2].size;
    if (r.size < 12) bad(what() + ": compressed bytes shorter than their 12-byte header");
  } else if (content.type == cbor::Type::bytes) {
    r.data = content.data;
    r.size = content.size;
  } else {
    bad(what() + ": typed array holds neither bytes nor a compression tag");
  }
  std::uint64_t expect = 0;
  if (__builtin_mul_overflow(std::uint64_t(r.rows), std::uint64_t(r.cols), &expect) ||
      __builtin_mul_overflow(expect, std::uint64_t(r.elem_size), &expect))
    expect = checked_product({r.rows, r.cols, r.elem_size}, what() + " size");  // raises, naming it
  const std::uint64_t got = r.compression.empty() ? r.size : frame_bytes::decoded_size(r.data);
  if (got != expect)
    bad(what() + " holds " + std::to_string(got) + " bytes; " + std::to_string(r.rows) + " x " + std::to_string(r.cols) +
        " elements of " + std::to_string(r.elem_size) + " bytes are " + std::to_string(expect));
  return r;
}

Array2D multidim(const cbor::Item& it, const std::string& what) {
  return multidim_impl(it, [&] { return what; });
}

// The pixel mask (uint32, nonzero = bad) as ascending flat indices.
std::vector<std::uint32_t> mask_indices(const Array2D& a, std::size_t rows, std::size_t cols) {
  if (a.rows != rows || a.cols != cols)
    bad("pixel_mask is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) + ", the images " +
        std::to_string(rows) + " x " + std::to_string(cols));
  if (a.tag != 70 && a.tag != 66) bad("pixel_mask is not uint32 (typed array tag " + std::to_string(a.tag) + ")");
  std::vector<std::uint8_t> plain(a.rows * a.cols * 4);
  if (a.compression == "bslz4") {
    io::codec::BitshuffleParams p;
    p.elem_size = 4;
    p.block_elems = frame_bytes::block_bytes(a.data) / 4;
    p.big_endian = a.tag == 66;
    io::codec::validate(p);
    io::codec::decode_chunk(p, a.rows * a.cols, a.data, a.size, plain.data());
  } else if (a.compression == "lz4") {
    frame_bytes::decode_lz4(a.data, a.size, plain.data(), plain.size());
    if (a.tag == 66) bad("big-endian lz4 pixel_mask (not supported)");
  } else {
    std::memcpy(plain.data(), a.data, plain.size());
    if (a.tag == 66) bad("big-endian pixel_mask (not supported)");
  }
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < a.rows * a.cols; ++i) {
    std::uint32_t v;
    std::memcpy(&v, plain.data() + 4 * i, 4);
    if (v) out.push_back(std::uint32_t(i));
  }
  return out;
}

nlohmann::json to_json(const cbor::Item& it, int depth = 0) {
  switch (it.type) {
    case cbor::Type::uint: return it.value;
    case cbor::Type::negint: return -1 - std::int64_t(std::min<std::uint64_t>(it.value, INT64_MAX - 1));
    case cbor::Type::floating: return it.real;
    case cbor::Type::boolean: return bool(it.value);
    case cbor::Type::text: return io::json_safe(std::string(it.text()));  // the detector's text may be any bytes
    case cbor::Type::bytes: return "<" + std::to_string(it.size) + " bytes>";
    case cbor::Type::tag: return depth > 8 ? nlohmann::json("...") : to_json(it.items[0], depth + 1);
    case cbor::Type::array: {
      auto a = nlohmann::json::array();
      for (std::size_t i = 0; i < it.items.size() && i < 64; ++i) a.push_back(to_json(it.items[i], depth + 1));
      return a;
    }
    case cbor::Type::map: {
      auto m = nlohmann::json::object();
      for (std::size_t i = 0; i + 1 < it.items.size(); i += 2)
        if (it.items[i].is_text()) m[io::json_safe(std::string(it.items[i].text()))] = to_json(it.items[i + 1], depth + 1);
      return m;
    }
    default: return nullptr;
  }
}

void start_fields(const cbor::Item& m, SeriesInfo& s) {
  s.protocol = "dectris-v2";
  s.det_cols = std::size_t(field(m, "image_size_x").unsigned_integer("image_size_x"));
  s.det_rows = std::size_t(field(m, "image_size_y").unsigned_integer("image_size_y"));
  if (s.det_rows == 0 || s.det_cols == 0 || s.det_rows > 65536 || s.det_cols > 65536)
    bad("image size " + std::to_string(s.det_cols) + " x " + std::to_string(s.det_rows) + " (1..65536 each)");
  const cbor::Item& dt = field(m, "image_dtype");
  if (!dt.is_text()) bad("image_dtype is not text");
  s.dtype = dtype_from_name(std::string(dt.text()));
  if (const cbor::Item* n = m.find("number_of_images")) s.frames = n->unsigned_integer("number_of_images");
  for (std::size_t i = 0; i + 1 < m.items.size(); i += 2) {
    const cbor::Item& k = m.items[i];
    if (!k.is_text()) continue;
    const std::string key(k.text());
    if (key == "pixel_mask" || key == "flatfield" || key == "countrate_correction_lookup_table") continue;
    s.metadata[io::json_safe(key)] = to_json(m.items[i + 1]);
  }
  if (const cbor::Item* e = m.find("incident_energy")) {
    const double ev = e->number("incident_energy");
    if (ev > 0) {
      s.calibration["energy_kev"] = ev / 1e3;
      s.calibration_detail["energy_kev"] = {
          {"value", ev / 1e3}, {"unit", "keV"}, {"source", "stream V2 start incident_energy (" + std::to_string(ev) + " eV)"}};
    }
  }
  for (const char* key : {"count_time", "frame_time"}) {
    if (const cbor::Item* t = m.find(key)) {
      const double v = t->number(key);
      if (v > 0) {
        const std::string k = std::string(key) + "_s";
        s.calibration[k] = v;
        s.calibration_detail[k] = {{"value", v}, {"unit", "s"}, {"source", std::string("stream V2 start ") + key}};
      }
    }
  }
  // A scan shape in user_data (what a microscope controller can put there): {"scan_shape": [rows, cols]}.
  if (const cbor::Item* ud = m.find("user_data")) {
    if (const cbor::Item* ss = ud->find("scan_shape")) {
      if (ss->type == cbor::Type::array && ss->items.size() == 2) {
        s.scan_rows = std::size_t(ss->items[0].unsigned_integer("user_data scan_shape rows"));
        s.scan_cols = std::size_t(ss->items[1].unsigned_integer("user_data scan_shape cols"));
        s.scan_shape_source = "stream V2 start user_data scan_shape";
      }
    }
  }
  if (const cbor::Item* pm = m.find("pixel_mask")) {
    if (pm->type != cbor::Type::map) bad("pixel_mask is not a map of channel -> array");
    if (pm->items.size() >= 2) {
      const cbor::Item& ch = pm->items[0];
      s.bad_pixels = mask_indices(multidim(pm->items[1], "pixel_mask"), s.det_rows, s.det_cols);
      s.pixel_mask_source =
          "stream V2 start pixel_mask" + (ch.is_text() ? " (" + io::json_safe(std::string(ch.text())) + ")" : "");
    }
  }
}

}  // namespace

Message decode(const std::uint8_t* data, std::size_t size, const std::string& channel) {
  Message msg;
  decode(data, size, channel, msg);
  return msg;
}

void decode(const std::uint8_t* data, std::size_t size, const std::string& channel, Message& msg) {
  if (size < 3 || data[0] != 0xd9 || data[1] != 0xd9 || data[2] != 0xf7)
    bad("does not start with the CBOR self-describe tag d9 d9 f7");
  const cbor::Item root = cbor::parse(data, size);
  const cbor::Item* m = root.untag(cbor::kSelfDescribe);
  if (!m || m->type != cbor::Type::map) bad("is not a map");
  const cbor::Item& type = field(*m, "type");
  if (!type.is_text()) bad("'type' is not text");
  msg.kind = Kind::end;
  msg.image = Image{};
  msg.series_unique_id.clear();
  msg.series_id = field(*m, "series_id").unsigned_integer("series_id");
  if (const cbor::Item* u = m->find("series_unique_id"); u && u->is_text())
    msg.series_unique_id = io::json_safe(std::string(u->text()));
  const std::string_view t = type.text();
  if (t == "start") {
    msg.kind = Kind::start;
    msg.start = SeriesInfo{};
    start_fields(*m, msg.start);
    msg.start.series_id = std::to_string(msg.series_id);
  } else if (t == "end") {
    msg.kind = Kind::end;
  } else if (t == "image") {
    msg.kind = Kind::image;
    msg.image.image_id = field(*m, "image_id").unsigned_integer("image_id");
    const cbor::Item& d = field(*m, "data");
    if (d.type != cbor::Type::map || d.items.empty()) bad("image 'data' is not a map of channels");
    const cbor::Item* arr = nullptr;
    if (channel.empty()) {
      if (!d.items[0].is_text()) bad("image channel name is not text");
      msg.image.channel = io::json_safe(std::string(d.items[0].text()));
      arr = &d.items[1];
    } else {
      arr = d.find(channel);
      if (!arr) {
        std::string names;
        for (std::size_t i = 0; i + 1 < d.items.size(); i += 2)
          if (d.items[i].is_text()) names += (names.empty() ? "" : ", ") + io::json_safe(std::string(d.items[i].text()));
        bad("image has no channel '" + channel + "' (it has " + names + ")");
      }
      msg.image.channel = channel;
    }
    const std::uint64_t id = msg.image.image_id;
    const Array2D a = multidim_impl(*arr, [id] { return "image " + std::to_string(id); });
    msg.image.rows = a.rows;
    msg.image.cols = a.cols;
    msg.image.dtype = typed_array_dtype(a.tag);
    msg.image.compression = a.compression;
    msg.image.data = a.data;
    msg.image.size = a.size;
  } else {
    bad("type '" + io::json_safe(std::string(t)) + "' (start, image or end expected)");
  }
}

namespace {
std::uint64_t dtype_tag(DType d) {
  switch (d) {
    case DType::u8: return 64;
    case DType::u16: return 69;
    case DType::u32: return 70;
    default: throw InvalidArgument("stream V2 images are uint8, uint16 or uint32");
  }
}
}  // namespace

std::vector<std::uint8_t> encode_start(std::uint64_t series_id, const SeriesInfo& info, double incident_energy_ev,
                                       const std::vector<std::uint32_t>& pixel_mask) {
  cbor::Writer w;
  w.tag(cbor::kSelfDescribe);
  const bool scan = info.scan_rows && info.scan_cols;
  w.map(9 + (pixel_mask.empty() ? 0 : 1) + (scan ? 1 : 0));
  w.text("type").text("start");
  w.text("series_id").uint(series_id);
  w.text("series_unique_id").text("qgpu-sim-" + std::to_string(series_id));
  w.text("channels").array(1).text("threshold_1");
  w.text("image_dtype").text(dtype_name(info.dtype));
  w.text("image_size_x").uint(info.det_cols);
  w.text("image_size_y").uint(info.det_rows);
  w.text("number_of_images").uint(info.frames);
  w.text("incident_energy").float64(incident_energy_ev);
  if (!pixel_mask.empty()) {
    w.text("pixel_mask").map(1).text("threshold_1");
    w.tag(kMultiDimRowMajor).array(2).array(2).uint(info.det_rows).uint(info.det_cols);
    std::vector<std::uint8_t> le(pixel_mask.size() * 4);
    for (std::size_t i = 0; i < pixel_mask.size(); ++i)
      for (int b = 0; b < 4; ++b) le[4 * i + b] = std::uint8_t(pixel_mask[i] >> (8 * b));
    w.tag(70).bytes(le.data(), le.size());
  }
  if (scan) w.text("user_data").map(1).text("scan_shape").array(2).uint(info.scan_rows).uint(info.scan_cols);
  return std::move(w.out());
}

std::vector<std::uint8_t> encode_image(std::uint64_t series_id, std::uint64_t image_id, std::size_t rows,
                                       std::size_t cols, DType dtype, const std::string& compression,
                                       const std::uint8_t* chunk, std::size_t size) {
  cbor::Writer w;
  w.out().reserve(size + 160);
  w.tag(cbor::kSelfDescribe).map(5);
  w.text("type").text("image");
  w.text("series_id").uint(series_id);
  w.text("series_unique_id").text("qgpu-sim-" + std::to_string(series_id));
  w.text("image_id").uint(image_id);
  w.text("data").map(1).text("threshold_1");
  w.tag(kMultiDimRowMajor).array(2).array(2).uint(rows).uint(cols);
  w.tag(dtype_tag(dtype));
  if (compression.empty()) {
    w.bytes(chunk, size);
  } else {
    w.tag(kDectrisCompression).array(3).text(compression).uint(compression == "bslz4" ? dtype_size(dtype) : 0);
    w.bytes(chunk, size);
  }
  return std::move(w.out());
}

std::vector<std::uint8_t> encode_end(std::uint64_t series_id) {
  cbor::Writer w;
  w.tag(cbor::kSelfDescribe).map(3);
  w.text("type").text("end");
  w.text("series_id").uint(series_id);
  w.text("series_unique_id").text("qgpu-sim-" + std::to_string(series_id));
  return std::move(w.out());
}

}  // namespace qgpu::live::stream2
