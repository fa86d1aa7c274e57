#include "io/dm/write_dm.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/atomic_output.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"

namespace qgpu::sample {

namespace {

struct Node {
  std::string name;
  bool group = false;
  std::vector<Node> kids;
  std::vector<std::uint64_t> info;
  std::string value;       // the value's bytes
  std::uint64_t hole = 0;  // bytes of the value streamed later (the image data)
};

class Tree {
 public:
  Tree(unsigned version, bool big) : dm4_(version == 4), big_(big) {}

  Node group(const std::string& name, std::vector<Node> kids) const {
    Node n;
    n.name = name;
    n.group = true;
    n.kids = std::move(kids);
    return n;
  }
  // A simple value of DM type `type` (2..12).
  Node number(const std::string& name, unsigned type, double v) const {
    Node n;
    n.name = name;
    n.info = {type};
    n.value = bytes_of(type, v);
    return n;
  }
  Node text(const std::string& name, const std::string& s) const {  // array of uint16 (UTF-16)
    Node n;
    n.name = name;
    n.info = {20, 4, s.size()};
    for (char ch : s) n.value += bytes_of(4, double(static_cast<unsigned char>(ch)));
    return n;
  }
  std::string bytes_of(unsigned type, double v) const {
    std::uint8_t b[8];
    std::size_t n = 0;
    switch (type) {
      case 2: {
        auto x = std::int16_t(v);
        std::memcpy(b, &x, n = 2);
        break;
      }
      case 3: {
        auto x = std::int32_t(v);
        std::memcpy(b, &x, n = 4);
        break;
      }
      case 4: {
        auto x = std::uint16_t(v);
        std::memcpy(b, &x, n = 2);
        break;
      }
      case 5: {
        auto x = std::uint32_t(v);
        std::memcpy(b, &x, n = 4);
        break;
      }
      case 6: {
        auto x = float(v);
        std::memcpy(b, &x, n = 4);
        break;
      }
      case 7: {
        double x = v;
        std::memcpy(b, &x, n = 8);
        break;
      }
      case 8:
      case 10:
        b[0] = std::uint8_t(v);
        n = 1;
        break;
      case 9:
        b[0] = std::uint8_t(std::int8_t(v));
        n = 1;
        break;
      default: throw InvalidArgument("DM writer: type " + std::to_string(type));
    }
    if (big_) std::reverse(b, b + n);
    return std::string(reinterpret_cast<char*>(b), n);
  }

  std::uint64_t content_size(const Node& n) const {
    if (n.group) {
      std::uint64_t s = 2 + word();
      for (const Node& k : n.kids) s += tag_size(k);
      return s;
    }
    return 4 + word() + n.info.size() * word() + n.value.size() + n.hole;
  }
  std::uint64_t tag_size(const Node& n) const { return 1 + 2 + n.name.size() + (dm4_ ? 8 : 0) + content_size(n); }

  // The root group's content (sorted, open, tags) into out; hole_at = where the streamed value goes.
  void emit_group_content(const Node& n, std::string& out, std::size_t& hole_at) const {
    out += char(1);  // sorted
    out += char(0);  // open
    put(out, n.kids.size(), word());
    for (const Node& k : n.kids) emit_tag(k, out, hole_at);
  }
  void emit_tag(const Node& n, std::string& out, std::size_t& hole_at) const {
    out += char(n.group ? 20 : 21);
    put(out, n.name.size(), 2);
    out += n.name;
    if (dm4_) put(out, content_size(n), 8);
    if (n.group) return emit_group_content(n, out, hole_at);
    out += "%%%%";
    put(out, n.info.size(), word());
    for (std::uint64_t w : n.info) put(out, w, word());
    out += n.value;
    if (n.hole) hole_at = out.size();
  }
  static void put(std::string& out, std::uint64_t v, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i) out += char(std::uint8_t(v >> (8 * (bytes - 1 - i))));
  }
  std::size_t word() const { return dm4_ ? 8 : 4; }

 private:
  bool dm4_, big_;
};

struct DmType {
  unsigned data_type;  // ImageData.DataType
  unsigned elem;       // the array's element type
};

DmType dm_type(DType t) {
  switch (t) {
    case DType::u8: return {6, 10};
    case DType::u16: return {10, 4};
    case DType::u32: return {11, 5};
    case DType::i8: return {9, 9};
    case DType::i16: return {1, 2};
    case DType::i32: return {7, 3};
    case DType::f32: return {2, 6};
    case DType::f64: return {12, 7};
    default: break;
  }
  throw DTypeError("sample --format dm3/dm4: dtype must be uint8/16/32, int8/16/32, float32 or float64, not " +
                   dtype_name(t));
}

}  // namespace

void write_sample_dm(const std::string& path, const SampleSpec& s, const DmSampleOptions& o,
                     const std::function<void(double)>& progress) {
  if (o.version != 3 && o.version != 4) throw InvalidArgument("DM version is 3 or 4");
  const DmType ty = dm_type(s.dtype);
  SampleSpec counts = s;  // simulated as counts, then converted to s.dtype
  counts.dtype = s.dtype == DType::u32 || s.dtype == DType::i32 ? DType::u32 : DType::u16;
  const Sampling sm = sampling(counts);
  const std::size_t es = dtype_size(s.dtype);
  const std::uint64_t frames = checked_mul<InvalidArgument>(s.scan_rows, s.scan_cols, "sample frames");
  const std::uint64_t frame_elems = checked_mul<InvalidArgument>(s.det_rows, s.det_cols, "sample frame");
  const std::uint64_t data_bytes = checked_product<InvalidArgument>({frames, frame_elems, es}, "sample bytes");
  if (o.version == 3 && data_bytes > 0xffffffffull - (1u << 20))
    throw InvalidArgument("a DM3 file holds less than 4 GiB: use --format dm4");
  if (o.transposed && data_bytes > (std::uint64_t(1) << 30))
    throw InvalidArgument("the transposed DM layout is written for small test files (<= 1 GiB) only");
  const bool big = s.big_endian;
  Tree t(o.version, big);

  const bool dm4 = o.version == 4;
  const double det_scale = dm4 ? sm.mrad_per_pixel / 1e3 / (sm.wavelength_angstrom / 10) : sm.mrad_per_pixel;
  const std::string det_unit = dm4 ? "1/nm" : "mrad";
  auto dim_cal = [&](double scale, const std::string& unit) {
    return t.group("", {t.number("Origin", 6, 0), t.number("Scale", 6, scale), t.text("Units", unit)});
  };
  std::vector<Node> cal_dims = {dim_cal(det_scale, det_unit), dim_cal(det_scale, det_unit),
                                dim_cal(sm.scan_step_angstrom / 10, "nm"), dim_cal(sm.scan_step_angstrom / 10, "nm")};
  std::vector<std::uint64_t> dims = {s.det_cols, s.det_rows, s.scan_cols, s.scan_rows};
  if (o.transposed) {
    std::rotate(dims.begin(), dims.begin() + 2, dims.end());
    std::rotate(cal_dims.begin(), cal_dims.begin() + 2, cal_dims.end());
  }
  std::vector<Node> dim_nodes;
  for (std::uint64_t d : dims) dim_nodes.push_back(t.number("", 5, double(d)));

  Node data;
  data.name = "Data";
  data.info = {20, ty.elem, frames * frame_elems};
  data.hole = data_bytes;

  // The thumbnail GMS writes first: a 16 x 16 uint8 image.
  Node thumb_data;
  thumb_data.name = "Data";
  thumb_data.info = {20, 10, 256};
  for (int i = 0; i < 256; ++i) thumb_data.value += char(i);
  Node thumbnail = t.group(
      "", {t.group("ImageData",
                   {t.group("Calibrations", {t.group("Dimension", {dim_cal(1, ""), dim_cal(1, "")})}), thumb_data,
                    t.number("DataType", 5, 6), t.group("Dimensions", {t.number("", 5, 16), t.number("", 5, 16)}),
                    t.number("PixelDepth", 5, 1)}),
           t.group("ImageTags", {}), t.text("Name", "thumbnail")});
  std::vector<Node> meta = {t.text("Format", "Diffraction image")};
  if (!o.transposed) meta.insert(meta.begin(), t.number("Data Order Swapped", 8, 1));
  Node image = t.group(
      "", {t.group("ImageData",
                   {t.group("Calibrations", {t.group("Brightness", {t.number("Origin", 6, 0), t.number("Scale", 6, 1),
                                                                    t.text("Units", "counts")}),
                                             t.group("Dimension", cal_dims), t.number("DisplayCalibratedUnits", 8, 1)}),
                    data, t.number("DataType", 5, ty.data_type), t.group("Dimensions", dim_nodes),
                    t.number("PixelDepth", 5, double(es))}),
           t.group("ImageTags", {t.group("Meta Data", meta),
                                 t.group("Microscope Info", {t.number("Voltage", 7, s.energy_kev * 1e3)})}),
           t.text("Name", "qgpu sample")});
  Node root = t.group("", {t.group("ImageList", {thumbnail, image}), t.number("InImageMode", 8, 1)});

  std::string body;
  std::size_t hole_at = 0;
  t.emit_group_content(root, body, hole_at);
  const std::uint64_t header_bytes = dm4 ? 16 : 12;
  const std::uint64_t file_bytes = header_bytes + body.size() + data_bytes + 8;  // 8 zero bytes close the file
  std::string head;
  Tree::put(head, o.version, 4);
  Tree::put(head, file_bytes - (dm4 ? 24 : 16), dm4 ? 8 : 4);
  Tree::put(head, big ? 0 : 1, 4);

  const double top = s.dtype == DType::u8    ? 255
                     : s.dtype == DType::i8  ? 127
                     : s.dtype == DType::i16 ? 32767
                     : s.dtype == DType::i32 ? 2147483647.0
                                             : 4294967295.0;
  auto convert = [&](const void* in, std::size_t n, std::uint8_t* out) {
    for (std::size_t i = 0; i < n; ++i) {
      const double v = std::min(counts.dtype == DType::u32 ? double(static_cast<const std::uint32_t*>(in)[i])
                                                           : double(static_cast<const std::uint16_t*>(in)[i]),
                                top);
      std::uint8_t tmp[8];
      switch (s.dtype) {
        case DType::u8: tmp[0] = std::uint8_t(v); break;
        case DType::i8: tmp[0] = std::uint8_t(std::int8_t(v)); break;
        case DType::u16: {
          auto x = std::uint16_t(v);
          std::memcpy(tmp, &x, 2);
          break;
        }
        case DType::i16: {
          auto x = std::int16_t(v);
          std::memcpy(tmp, &x, 2);
          break;
        }
        case DType::u32: {
          auto x = std::uint32_t(v);
          std::memcpy(tmp, &x, 4);
          break;
        }
        case DType::i32: {
          auto x = std::int32_t(v);
          std::memcpy(tmp, &x, 4);
          break;
        }
        case DType::f32: {
          auto x = float(v) * 0.5f - 3.0f;
          std::memcpy(tmp, &x, 4);
          break;
        }
        default: {
          double x = v * 0.25 - 7.0;
          std::memcpy(tmp, &x, 8);
          break;
        }
      }
      if (big) std::reverse(tmp, tmp + es);
      std::memcpy(out + i * es, tmp, es);
    }
  };

  write_file_atomically(
      path,
      [&](std::FILE* f) {
        auto write = [&](const void* p, std::size_t n) {
          if (std::fwrite(p, 1, n, f) != n) throw IoError("cannot write '" + path + "'");
        };
        write(head.data(), head.size());
        write(body.data(), hole_at);
        const std::size_t cs = dtype_size(counts.dtype);
        if (o.transposed) {
          std::vector<std::uint8_t> in(frames * frame_elems * cs), conv(frames * frame_elems * es), out(conv.size());
          simulate_frames(counts, 0, frames, in.data());
          convert(in.data(), frames * frame_elems, conv.data());
          // element (sr, sc, dr, dc) at sc + scan_cols * (sr + scan_rows * (dc + det_cols * dr))
          for (std::uint64_t sr = 0; sr < s.scan_rows; ++sr)
            for (std::uint64_t sc = 0; sc < s.scan_cols; ++sc)
              for (std::uint64_t dr = 0; dr < s.det_rows; ++dr)
                for (std::uint64_t dc = 0; dc < s.det_cols; ++dc) {
                  const std::uint64_t src = ((sr * s.scan_cols + sc) * s.det_rows + dr) * s.det_cols + dc;
                  const std::uint64_t dst = sc + s.scan_cols * (sr + s.scan_rows * (dc + s.det_cols * dr));
                  std::memcpy(out.data() + dst * es, conv.data() + src * es, es);
                }
          write(out.data(), out.size());
        } else {
          const std::size_t batch = std::max<std::size_t>(1, (std::size_t(64) << 20) / (frame_elems * 4));
          std::vector<std::uint8_t> in(std::min<std::uint64_t>(batch, frames) * frame_elems * cs);
          std::vector<std::uint8_t> out(std::min<std::uint64_t>(batch, frames) * frame_elems * es);
          for (std::uint64_t first = 0; first < frames; first += batch) {
            const std::size_t n = std::size_t(std::min<std::uint64_t>(batch, frames - first));
            simulate_frames(counts, first, n, in.data());
            convert(in.data(), n * frame_elems, out.data());
            write(out.data(), n * frame_elems * es);
            if (progress) progress(double(first + n) / double(frames));
          }
        }
        write(body.data() + hole_at, body.size() - hole_at);
        const char zeros[8] = {0};
        write(zeros, 8);
      },
      "sample output");
}

}  // namespace qgpu::sample
