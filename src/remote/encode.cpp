#include "remote/encode.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/checked.hpp"
#include "core/parallel_for.hpp"

#include "core/error.hpp"

namespace qgpu::remote {

namespace {
constexpr std::uint64_t kExact = std::uint64_t(1) << 53;  // integers a JSON double holds exactly
}  // namespace

nlohmann::json exact_u64_array(const std::vector<std::uint64_t>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (std::uint64_t x : v) {
    if (x <= kExact)
      a.push_back(x);
    else
      a.push_back(std::to_string(x));
  }
  return a;
}

nlohmann::json image_json(const Image<std::uint64_t>& img) {
  return {{"rows", img.rows}, {"cols", img.cols}, {"dtype", "uint64"}, {"data", exact_u64_array(img.data)},
          {"provenance", img.provenance.to_json()}};
}

nlohmann::json image_json(const Image<std::int64_t>& img) {
  nlohmann::json a = nlohmann::json::array();
  for (std::int64_t x : img.data) {
    if (x <= std::int64_t(kExact) && x >= -std::int64_t(kExact))
      a.push_back(x);
    else
      a.push_back(std::to_string(x));
  }
  return {{"rows", img.rows}, {"cols", img.cols}, {"dtype", "int64"}, {"data", a},
          {"provenance", img.provenance.to_json()}};
}

namespace {

template <class F> nlohmann::json float_image_json(const Image<F>& img) {
  nlohmann::json a = nlohmann::json::array();
  for (F x : img.data) {
    if (std::isfinite(x))
      a.push_back(x);
    else
      a.push_back(nullptr);
  }
  return {{"rows", img.rows}, {"cols", img.cols}, {"dtype", dtype_name(dtype_of<F>::value)}, {"data", a},
          {"provenance", img.provenance.to_json()}};
}

}  // namespace

nlohmann::json image_json(const Image<float>& img) { return float_image_json(img); }
nlohmann::json image_json(const Image<double>& img) { return float_image_json(img); }

namespace {

void put_be32(std::string& out, std::uint32_t v) {
  const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  out.append(b, 4);
}

// One PNG chunk: length, type, data, CRC-32 of type + data.
void put_chunk(std::string& out, const char type[4], const std::uint8_t* data, std::size_t n) {
  put_be32(out, std::uint32_t(n));
  const std::size_t at = out.size();
  out.append(type, 4);
  out.append(reinterpret_cast<const char*>(data), n);
  put_be32(out, std::uint32_t(crc32(0, reinterpret_cast<const Bytef*>(out.data() + at), uInt(n + 4))));
}

// `n` bytes as one zlib stream (RFC 1950), deflated in bands of at least kBand bytes on the host's cores: each band
// a raw deflate stream of zlib's run-length strategy, every band but the last ended by a sync flush (an empty stored
// block that byte-aligns it), so that the bands join into one stream (pigz's way); Adler-32 of the whole input.
// Run-length matches suit the pictures answered here (science images: LZ77's longer search bought a few per cent on
// a noisy 512x512 picture and cost 2 ms of the 3 ms goal on the H200).
// Bytes whose order-0 entropy says deflate would keep more than kStoreAbove of them are stored instead (deflate
// level 0: a copy). A noisy 512x512 picture's indices deflate to 89 % of their size at ~130 MB/s per core (2 ms of
// one core here): sending a quarter more bytes costs less than that on any link the service answers on (loopback, a
// LAN with a token); smooth pictures (iDPC, patterns) still deflate.
constexpr double kStoreAbove = 0.75;

// The estimate: the smaller order-0 entropy of the bytes and of their differences to the previous byte (a smooth
// picture's indices take every value, but change little: runs deflate finds).
bool worth_deflating(const std::uint8_t* in, std::size_t n) {
  if (n < 4096) return true;
  std::array<std::uint32_t, 256> h{}, d{};
  ++h[in[0]];
  ++d[0];
  for (std::size_t i = 1; i < n; ++i) {
    ++h[in[i]];
    ++d[std::uint8_t(in[i] - in[i - 1])];
  }
  const auto bits = [n](const std::array<std::uint32_t, 256>& c) {
    double b = 0;
    for (std::uint32_t k : c)
      if (k) b -= double(k) * std::log2(double(k) / double(n));
    return b;
  };
  return std::min(bits(h), bits(d)) / 8 < kStoreAbove * double(n);
}

std::vector<std::uint8_t> zlib_in_bands(const std::uint8_t* in, std::size_t n) {
  if (!worth_deflating(in, n)) {  // one stream of stored blocks
    uLongf size = compressBound(uLong(n));
    std::vector<std::uint8_t> out(size);
    if (compress2(out.data(), &size, in, uLong(n), 0) != Z_OK) throw Error("PNG: zlib could not store the picture");
    out.resize(size);
    return out;
  }
  constexpr std::size_t kBand = std::size_t(32) << 10;
  const std::size_t bands = std::max<std::size_t>(1, (n + kBand - 1) / kBand);
  const std::size_t per = (n + bands - 1) / bands;
  std::vector<std::vector<std::uint8_t>> out(bands);
  parallel_for_first_error(
      bands,
      [&](std::size_t b) {
        const std::size_t from = std::min(n, b * per), len = std::min(n, from + per) - from;
        z_stream z{};
        if (deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_RLE) != Z_OK) throw std::bad_alloc();
        std::vector<std::uint8_t>& o = out[b];
        o.resize(deflateBound(&z, uLong(len)) + 16);  // + the sync flush's empty stored block
        z.next_in = const_cast<Bytef*>(in + from);
        z.avail_in = uInt(len);
        z.next_out = o.data();
        z.avail_out = uInt(o.size());
        const int rc = deflate(&z, b + 1 == bands ? Z_FINISH : Z_SYNC_FLUSH);
        const bool done = b + 1 == bands ? rc == Z_STREAM_END : rc == Z_OK && z.avail_in == 0 && z.avail_out > 0;
        o.resize(z.total_out);
        deflateEnd(&z);
        if (!done) throw Error("PNG: deflate found no room in its bound");
      },
      64);
  std::vector<std::uint8_t> stream = {0x78, 0x01};  // deflate, 32 KiB window, fastest
  for (const auto& o : out) stream.insert(stream.end(), o.begin(), o.end());
  const uLong adler = adler32_z(adler32(0, nullptr, 0), in, n);
  for (int i = 3; i >= 0; --i) stream.push_back(std::uint8_t(adler >> (8 * i)));
  return stream;
}

}  // namespace

namespace {

// The picture's colours as a palette and each pixel's index, when it has at most 256 (a colormapped picture always
// does: the map's 256 colours and transparent black); false otherwise. Open addressing over 1024 slots.
bool palette_of(const display::Rgba& img, std::vector<std::uint32_t>& colours, std::vector<std::uint8_t>& index) {
  constexpr std::uint32_t kSlots = 1024;
  std::uint32_t key[kSlots];
  std::int16_t val[kSlots];
  std::fill(val, val + kSlots, std::int16_t(-1));
  colours.clear();
  index.resize(img.rows * img.cols);
  const std::uint8_t* px = img.rgba.data();
  std::uint32_t last = 0;
  int last_i = -1;
  for (std::size_t i = 0; i < index.size(); ++i, px += 4) {
    const std::uint32_t c = std::uint32_t(px[0]) | std::uint32_t(px[1]) << 8 | std::uint32_t(px[2]) << 16 |
                            std::uint32_t(px[3]) << 24;
    if (last_i >= 0 && c == last) {  // runs of one colour are common
      index[i] = std::uint8_t(last_i);
      continue;
    }
    std::uint32_t h = (c * 2654435761u) >> 22;
    while (val[h] >= 0 && key[h] != c) h = (h + 1) & (kSlots - 1);
    if (val[h] < 0) {
      if (colours.size() == 256) return false;
      key[h] = c;
      val[h] = std::int16_t(colours.size());
      colours.push_back(c);
    }
    index[i] = std::uint8_t(val[h]);
    last = c;
    last_i = val[h];
  }
  return true;
}

}  // namespace

namespace {

// The PNG of rows x cols pixels: palette indices (`colours`: RGBA packed little-endian, at most 256) or RGB / RGBA
// pixels (`ch` 3 or 4 of the RGBA source), deflated in bands (zlib_in_bands).
std::string png_of(std::size_t rows, std::size_t cols, const std::uint8_t* index,
                   const std::vector<std::uint32_t>& colours, const std::uint8_t* rgba, bool opaque) {
  const bool palette = index != nullptr;
  const std::size_t ch = palette ? 1 : opaque ? 3 : 4, row_bytes = 1 + cols * ch;
  std::vector<std::uint8_t> filtered(checked_mul<InvalidArgument>(row_bytes, rows, "PNG rows"));
  for (std::size_t r = 0; r < rows; ++r) {
    std::uint8_t* dst = filtered.data() + r * row_bytes;
    if (palette) {
      *dst++ = 0;  // NONE
      std::memcpy(dst, index + r * cols, cols);
      continue;
    }
    const std::uint8_t* src = rgba + r * cols * 4;
    *dst++ = 1;  // SUB: each byte less the same channel of the pixel to its left
    for (std::size_t k = 0; k < ch; ++k) dst[k] = src[k];
    for (std::size_t c = 1; c < cols; ++c)
      for (std::size_t k = 0; k < ch; ++k) dst[c * ch + k] = std::uint8_t(src[c * 4 + k] - src[(c - 1) * 4 + k]);
  }
  const std::vector<std::uint8_t> idat = zlib_in_bands(filtered.data(), filtered.size());
  const std::size_t n = idat.size();

  std::string out;
  out.reserve(n + 1100);
  out.append("\x89PNG\r\n\x1a\n", 8);
  std::uint8_t ihdr[13] = {};
  for (int i = 0; i < 4; ++i) {
    ihdr[i] = std::uint8_t(cols >> (24 - 8 * i));
    ihdr[4 + i] = std::uint8_t(rows >> (24 - 8 * i));
  }
  ihdr[8] = 8;                                  // bits per channel (or per index)
  ihdr[9] = palette ? 3 : opaque ? 2 : 6;       // colour type: palette, RGB or RGBA; compression, filter, interlace 0
  put_chunk(out, "IHDR", ihdr, sizeof ihdr);
  if (palette) {
    std::vector<std::uint8_t> plte, trns;
    for (std::uint32_t c : colours) {
      plte.insert(plte.end(), {std::uint8_t(c), std::uint8_t(c >> 8), std::uint8_t(c >> 16)});
      trns.push_back(std::uint8_t(c >> 24));
    }
    put_chunk(out, "PLTE", plte.data(), plte.size());
    if (!opaque) {  // alpha per palette entry, up to the last one that is not opaque
      while (!trns.empty() && trns.back() == 255) trns.pop_back();
      put_chunk(out, "tRNS", trns.data(), trns.size());
    }
  }
  put_chunk(out, "IDAT", idat.data(), n);
  put_chunk(out, "IEND", nullptr, 0);
  return out;
}

void check_picture(std::size_t rows, std::size_t cols, bool consistent) {
  if (rows == 0 || cols == 0 || !consistent)
    throw InvalidArgument("cannot encode an empty or inconsistent picture as PNG");
  if (rows > 0x7fffffffu || cols > 0x7fffffffu / 4)
    throw InvalidArgument("picture of " + std::to_string(cols) + "x" + std::to_string(rows) + " is too large for PNG");
}

}  // namespace

std::string png_bytes(const display::Rgba& img) {
  check_picture(img.rows, img.cols, img.rgba.size() == img.rows * img.cols * 4);
  // Interactive responses (the service's PNG answers, the notebook's pictures), deflated in bands on the host's
  // cores (zlib_in_bands). A picture of at most 256 colours (every colormapped
  // one) is written as a palette PNG: one byte per pixel, a quarter of what RGBA deflates, rows unfiltered. Others:
  // RGB when every pixel is opaque, else RGBA, every row with the SUB filter.
  std::vector<std::uint32_t> colours;
  std::vector<std::uint8_t> index;
  const bool palette = palette_of(img, colours, index);
  bool opaque = true;
  if (palette) {
    for (std::uint32_t c : colours) opaque = opaque && (c >> 24) == 255;
  } else {
    for (std::size_t i = 3; i < img.rgba.size() && opaque; i += 4) opaque = img.rgba[i] == 255;
  }
  return png_of(img.rows, img.cols, palette ? index.data() : nullptr, colours, img.rgba.data(), opaque);
}

std::string png_bytes(const display::Indexed& img, const display::Lut& lut) {
  check_picture(img.rows, img.cols, img.index.size() == img.rows * img.cols);
  if (img.transparent)
    throw InvalidArgument("png_bytes: an indexed picture with transparent pixels needs a 257th colour; render it");
  std::vector<std::uint32_t> colours(256);
  bool opaque = true;
  for (std::size_t i = 0; i < 256; ++i) {
    colours[i] = std::uint32_t(lut[4 * i]) | std::uint32_t(lut[4 * i + 1]) << 8 | std::uint32_t(lut[4 * i + 2]) << 16 |
                 std::uint32_t(lut[4 * i + 3]) << 24;
    opaque = opaque && lut[4 * i + 3] == 255;
  }
  return png_of(img.rows, img.cols, img.index.data(), colours, nullptr, opaque);
}

}  // namespace qgpu::remote
