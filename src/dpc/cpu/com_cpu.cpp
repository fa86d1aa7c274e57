// Host reference of the CoM: exact uint64 sums per frame, row by row, frames split over a few threads.
#include <algorithm>
#include <atomic>
#include <thread>

#include "core/error.hpp"
#include "dpc/com_backend.hpp"
#include "dpc/com_math.hpp"

namespace qgpu::dpc::detail {

namespace {

struct Sums {
  std::uint64_t s = 0, sr = 0, sc = 0;
};

// Sr = sum_r r * (row sum), Sc = sum_r sum_c c * I: every term an exact integer.
template <class T> Sums frame_sums(const T* f, const std::uint8_t* mask, std::size_t rows, std::size_t cols) {
  Sums out;
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = f + r * cols;
    std::uint64_t row_sum = 0, row_c = 0;
    if (mask) {
      const std::uint8_t* m = mask + r * cols;
      for (std::size_t c = 0; c < cols; ++c) {
        const std::uint64_t v = m[c] ? std::uint64_t(row[c]) : 0;
        row_sum += v;
        row_c += v * c;
      }
    } else {
      for (std::size_t c = 0; c < cols; ++c) {
        const std::uint64_t v = row[c];
        row_sum += v;
        row_c += v * c;
      }
    }
    out.s += row_sum;
    out.sr += row_sum * r;
    out.sc += row_c;
  }
  return out;
}

template <class T> ComMaps com_typed(const Dataset& ds, const std::uint8_t* mask) {
  const Shape4D& sh = ds.shape();
  const T* data = reinterpret_cast<const T*>(ds.host_bytes().data());
  const std::size_t frames = sh.frames(), fp = sh.frame_pixels();
  const double centre_r = (double(sh.det_rows) - 1) / 2, centre_c = (double(sh.det_cols) - 1) / 2;
  const std::uint64_t max_index = std::max(sh.det_rows, sh.det_cols) - 1;

  ComMaps out;
  out.row.resize(frames);
  out.col.resize(frames);
  std::atomic<std::uint64_t> empty{0};
  std::atomic<bool> wrapped{false};

  auto work = [&](std::size_t first, std::size_t last) {
    std::uint64_t local_empty = 0;
    for (std::size_t f = first; f < last; ++f) {
      const Sums s = frame_sums(data + f * fp, mask, sh.det_rows, sh.det_cols);
      if (com_sums_may_wrap(s.s, max_index)) wrapped = true;
      if (s.s == 0) ++local_empty;
      com_from_sums(s.s, s.sr, s.sc, centre_r, centre_c, out.row[f], out.col[f]);
    }
    empty += local_empty;
  };

  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t n_threads = std::min<std::size_t>(hw, std::max<std::size_t>(1, frames / 16));
  if (n_threads <= 1) {
    work(0, frames);
  } else {
    std::vector<std::thread> pool;
    const std::size_t per = (frames + n_threads - 1) / n_threads;
    for (std::size_t t = 0; t < n_threads; ++t) {
      const std::size_t a = t * per, b = std::min(frames, a + per);
      if (a < b) pool.emplace_back(work, a, b);
    }
    for (auto& th : pool) th.join();
  }
  if (wrapped)
    throw Error("CoM: a frame's weighted sums exceed the exact uint64 range (counts too large for this detector)");
  out.empty_frames = empty;
  return out;
}

}  // namespace

ComMaps com_cpu(const Dataset& ds, const std::uint8_t* mask) {
  return dispatch_count_dtype(ds.dtype(), [&](auto t) { return com_typed<decltype(t)>(ds, mask); });
}

}  // namespace qgpu::dpc::detail
