#include "resident/encoded/cpu/encoded_cpu.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "resident/encoded/stream_codec.hpp"

namespace qgpu::encoded::cpu {

namespace {

[[noreturn]] void malformed(std::size_t tile, std::size_t pixel) {
  throw FormatError("encoded stream of tile " + std::to_string(tile) + ", pixel " + std::to_string(pixel) +
                    " is malformed");
}

std::size_t stream_size(const TileRef& t, std::size_t p) { return t.dir[p + 1] - t.dir[p]; }

template <class T>
HostTile encode_tile_t(const Layout& layout, const T* frames, std::uint32_t count, unsigned threads) {
  const std::size_t P = layout.frame_pixels;
  const std::uint32_t slot_bytes = stream_slot_bytes(count);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, P));
  // Each worker encodes a contiguous pixel range into its own buffer; the buffers are joined in pixel order.
  std::vector<std::vector<std::uint8_t>> parts(threads);
  std::vector<std::uint32_t> sizes(P);
  HostTile tile;
  tile.len = count;
  tile.pixel_sums.resize(P);
  auto work = [&](unsigned w) {
    const std::size_t p0 = P * w / threads, p1 = P * (w + 1) / threads;
    std::vector<std::uint8_t> slot(slot_bytes);
    auto& out = parts[w];
    for (std::size_t p = p0; p < p1; ++p) {
      const auto get = [&](std::uint32_t i) { return static_cast<std::uint32_t>(frames[i * P + p]); };
      const std::uint32_t n = encode_stream(get, count, slot.data(), &tile.pixel_sums[p], layout.policy);
      sizes[p] = n;
      out.insert(out.end(), slot.begin(), slot.begin() + n);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < threads; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& th : pool) th.join();
  tile.dir.resize(P + 1);
  std::uint64_t off = 0;
  for (std::size_t p = 0; p < P; ++p) {
    tile.dir[p] = static_cast<std::uint32_t>(off);
    off += sizes[p];
  }
  tile.dir[P] = static_cast<std::uint32_t>(off);  // validate(layout) bounds a tile below 4 GiB
  tile.payload.reserve(off);
  for (auto& part : parts) tile.payload.insert(tile.payload.end(), part.begin(), part.end());
  return tile;
}

template <class Put> void decode(const TileRef& t, std::size_t ti, std::size_t p, std::uint32_t first,
                                 std::uint32_t last, Put&& put) {
  if (!decode_stream(t.payload + t.dir[p], static_cast<std::uint32_t>(stream_size(t, p)), t.len, first, last, put))
    malformed(ti, p);
}

void check_tiles(const Layout& layout, const std::vector<TileRef>& tiles) {
  if (tiles.size() != layout.tiles())
    throw InvalidArgument("encoded resident holds " + std::to_string(tiles.size()) + " of " +
                          std::to_string(layout.tiles()) + " tiles: append every frame before querying");
}

}  // namespace

HostTile encode_tile(const Layout& layout, const void* frames, std::uint32_t count, unsigned threads) {
  validate(layout);
  if (count == 0 || count > layout.tile)
    throw InvalidArgument("a tile holds 1.." + std::to_string(layout.tile) + " frames, not " + std::to_string(count));
  return dispatch_count_dtype(layout.dtype, [&](auto z) {
    using T = decltype(z);
    return encode_tile_t(layout, static_cast<const T*>(frames), count, threads);
  });
}

void frame_totals(const Layout& layout, const void* frames, std::size_t count, std::vector<std::uint64_t>& out) {
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using T = decltype(z);
    const T* f = static_cast<const T*>(frames);
    for (std::size_t i = 0; i < count; ++i) {
      std::uint64_t s = 0;
      for (std::size_t p = 0; p < layout.frame_pixels; ++p) s += f[i * layout.frame_pixels + p];
      out.push_back(s);
    }
  });
}

std::vector<std::vector<std::uint64_t>> masked_sums(const Layout& layout, const std::vector<TileRef>& tiles,
                                                    const std::vector<std::uint32_t>& pixels,
                                                    const std::vector<std::vector<std::uint32_t>>& weights) {
  check_tiles(layout, tiles);
  if (weights.empty()) throw InvalidArgument("masked sum without weights");
  for (const auto& w : weights)
    if (pixels.size() != w.size()) throw InvalidArgument("masked sum: pixel and weight lists differ in length");
  for (std::uint32_t p : pixels)
    if (p >= layout.frame_pixels) throw RegionError("masked sum pixel " + std::to_string(p) + " is outside the frame");
  std::vector<std::vector<std::uint64_t>> out(weights.size(), std::vector<std::uint64_t>(layout.frames, 0));
  for (std::size_t t = 0; t < tiles.size(); ++t)
    for (std::size_t j = 0; j < pixels.size(); ++j)
      decode(tiles[t], t, pixels[j], 0, tiles[t].len, [&](std::uint32_t i, std::uint32_t v) {
        for (std::size_t k = 0; k < weights.size(); ++k) out[k][t * layout.tile + i] += std::uint64_t(weights[k][j]) * v;
      });
  return out;
}

std::vector<std::uint64_t> masked_sum(const Layout& layout, const std::vector<TileRef>& tiles,
                                      const std::vector<std::uint32_t>& pixels,
                                      const std::vector<std::uint32_t>& weights) {
  return std::move(masked_sums(layout, tiles, pixels, {weights})[0]);
}

std::vector<std::uint8_t> decode_frame(const Layout& layout, const std::vector<TileRef>& tiles, std::size_t index) {
  check_tiles(layout, tiles);
  if (index >= layout.frames)
    throw RegionError("frame " + std::to_string(index) + " is outside the " + std::to_string(layout.frames) +
                      " scan positions");
  std::vector<std::uint8_t> out(layout.frame_pixels * dtype_size(layout.dtype), 0);
  const std::size_t t = index / layout.tile;
  const std::uint32_t i = static_cast<std::uint32_t>(index % layout.tile);
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using T = decltype(z);
    T* o = reinterpret_cast<T*>(out.data());
    for (std::size_t p = 0; p < layout.frame_pixels; ++p)
      decode(tiles[t], t, p, i, i + 1, [&](std::uint32_t, std::uint32_t v) { o[p] = static_cast<T>(v); });
  });
  return out;
}

std::vector<std::uint8_t> decode_region(const Layout& layout, const std::vector<TileRef>& tiles,
                                        const RegionRequest& r) {
  check_tiles(layout, tiles);
  if (r.rows == 0 || r.cols == 0 || r.det_rows == 0 || r.det_cols == 0 || r.col0 + r.cols > r.scan_cols ||
      (r.row0 + r.rows) * r.scan_cols > layout.frames || r.drow0 + r.det_rows > layout.frame_pixels / r.det_width ||
      r.dcol0 + r.det_cols > r.det_width)
    throw RegionError("encoded region read reaches outside the dataset");
  const std::size_t det_n = r.det_rows * r.det_cols;
  std::vector<std::uint8_t> out(r.rows * r.cols * det_n * dtype_size(layout.dtype), 0);
  const std::size_t first = r.row0 * r.scan_cols + r.col0, last = (r.row0 + r.rows - 1) * r.scan_cols + r.col0 + r.cols;
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using T = decltype(z);
    T* o = reinterpret_cast<T*>(out.data());
    for (std::size_t t = first / layout.tile; t * layout.tile < last; ++t) {
      const std::size_t start = t * layout.tile;
      const auto a = static_cast<std::uint32_t>(std::max(first, start) - start);
      const auto b = static_cast<std::uint32_t>(std::min<std::size_t>(last, start + tiles[t].len) - start);
      for (std::size_t dr = 0; dr < r.det_rows; ++dr)
        for (std::size_t dc = 0; dc < r.det_cols; ++dc) {
          const std::size_t p = (r.drow0 + dr) * r.det_width + r.dcol0 + dc;
          decode(tiles[t], t, p, a, b, [&](std::uint32_t i, std::uint32_t v) {
            const std::size_t pos = start + i, row = pos / r.scan_cols, col = pos % r.scan_cols;
            if (col < r.col0 || col >= r.col0 + r.cols) return;
            o[((row - r.row0) * r.cols + (col - r.col0)) * det_n + dr * r.det_cols + dc] = static_cast<T>(v);
          });
        }
    }
  });
  return out;
}

std::vector<std::uint8_t> decode_pixels(const Layout& layout, const std::vector<TileRef>& tiles,
                                        const std::vector<std::uint32_t>& pixels) {
  check_tiles(layout, tiles);
  for (std::uint32_t p : pixels)
    if (p >= layout.frame_pixels) throw RegionError("pixel " + std::to_string(p) + " is outside the frame");
  const std::size_t N = layout.frames;
  std::vector<std::uint8_t> out(pixels.size() * N * dtype_size(layout.dtype), 0);
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using T = decltype(z);
    T* o = reinterpret_cast<T*>(out.data());
    for (std::size_t t = 0; t < tiles.size(); ++t)
      for (std::size_t j = 0; j < pixels.size(); ++j)
        decode(tiles[t], t, pixels[j], 0, tiles[t].len,
               [&](std::uint32_t i, std::uint32_t v) { o[j * N + t * layout.tile + i] = static_cast<T>(v); });
  });
  return out;
}

std::vector<std::uint8_t> decode_all(const Layout& layout, const std::vector<TileRef>& tiles) {
  check_tiles(layout, tiles);
  const std::size_t P = layout.frame_pixels;
  std::vector<std::uint8_t> out(layout.frames * P * dtype_size(layout.dtype), 0);
  dispatch_count_dtype(layout.dtype, [&](auto z) {
    using T = decltype(z);
    T* o = reinterpret_cast<T*>(out.data());
    for (std::size_t t = 0; t < tiles.size(); ++t)
      for (std::size_t p = 0; p < P; ++p)
        decode(tiles[t], t, p, 0, tiles[t].len,
               [&](std::uint32_t i, std::uint32_t v) { o[(t * layout.tile + i) * P + p] = static_cast<T>(v); });
  });
  return out;
}

}  // namespace qgpu::encoded::cpu
