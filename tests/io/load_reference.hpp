#pragma once
// Independent expectations for loads: frames straight from the simulator, binned by plain loops here.
#include <cstdint>
#include <vector>

#include "io/sample/sample.hpp"
#include "resident/dataset.hpp"

namespace qgpu::test {

template <class T> std::vector<T> simulated(const sample::SampleSpec& s) {
  std::vector<T> v(s.scan_rows * s.scan_cols * s.det_rows * s.det_cols);
  sample::simulate_frames(s, 0, s.scan_rows * s.scan_cols, v.data());
  return v;
}

// Expected result of load(scan_region, detector_region, bin_scan, bin_det) on the simulated frames.
template <class T, class U>
std::vector<U> expected_load(const sample::SampleSpec& s, const std::vector<T>& all, Region sr, Region dr,
                             std::size_t bs, std::size_t bd) {
  if (sr.is_full()) sr = {0, 0, s.scan_rows, s.scan_cols};
  if (dr.is_full()) dr = {0, 0, s.det_rows, s.det_cols};
  const std::size_t orows = sr.rows / bs, ocols = sr.cols / bs, odr = dr.rows / bd, odc = dr.cols / bd;
  std::vector<U> out(orows * ocols * odr * odc);
  for (std::size_t a = 0; a < orows; ++a)
    for (std::size_t b = 0; b < ocols; ++b)
      for (std::size_t c = 0; c < odr; ++c)
        for (std::size_t d = 0; d < odc; ++d) {
          std::uint64_t sum = 0;
          for (std::size_t i = 0; i < bs; ++i)
            for (std::size_t j = 0; j < bs; ++j)
              for (std::size_t k = 0; k < bd; ++k)
                for (std::size_t l = 0; l < bd; ++l) {
                  const std::size_t f = (sr.row0 + a * bs + i) * s.scan_cols + sr.col0 + b * bs + j;
                  const std::size_t px = (dr.row0 + c * bd + k) * s.det_cols + dr.col0 + d * bd + l;
                  sum += all[f * s.det_rows * s.det_cols + px];
                }
          out[((a * ocols + b) * odr + c) * odc + d] = U(sum);
        }
  return out;
}

template <class T> std::vector<T> as_vector(const HostArray4D& h) {
  return std::vector<T>(h.as<T>(), h.as<T>() + h.shape.elements());
}

}  // namespace qgpu::test
