#pragma once
// Test data for the dpc domain: in-memory datasets and an analytic potential with its exact gradient.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "core/image.hpp"
#include "resident/dataset.hpp"

namespace qgpu::dpc::testing {

// Dataset of dtype T whose pixel (scan r, scan c, det r, det c) is value(sr, sc, dr, dc).
template <class T>
Dataset make_dataset(const Shape4D& sh, const std::function<T(std::size_t, std::size_t, std::size_t, std::size_t)>& value) {
  HostArray4D h;
  h.shape = sh;
  h.dtype = dtype_of<T>::value;
  h.bytes.resize(sh.elements() * sizeof(T));
  T* p = h.as<T>();
  std::size_t i = 0;
  for (std::size_t sr = 0; sr < sh.scan_rows; ++sr)
    for (std::size_t sc = 0; sc < sh.scan_cols; ++sc)
      for (std::size_t dr = 0; dr < sh.det_rows; ++dr)
        for (std::size_t dc = 0; dc < sh.det_cols; ++dc) p[i++] = value(sr, sc, dr, dc);
  Provenance pv;
  pv.operation = "test.synthetic";
  pv.backend = "cpu";
  return Dataset::from_host(std::move(h), nlohmann::json::object(), pv);
}

// Poisson counts of a bright disk (radius det/5) that moves with the probe position; every 7th frame is empty
// when with_empty. Values are clamped to T's range.
template <class T>
Dataset poisson_dataset(const Shape4D& sh, double peak, std::uint32_t seed, bool with_empty = true) {
  std::mt19937 rng(seed);
  HostArray4D h;
  h.shape = sh;
  h.dtype = dtype_of<T>::value;
  h.bytes.resize(sh.elements() * sizeof(T));
  T* p = h.as<T>();
  const double rad = std::min(sh.det_rows, sh.det_cols) / 5.0;
  std::size_t i = 0;
  for (std::size_t f = 0; f < sh.frames(); ++f) {
    const double cr = sh.det_rows / 2.0 + 3.0 * std::sin(0.37 * double(f));
    const double cc = sh.det_cols / 2.0 + 3.0 * std::cos(0.23 * double(f));
    const bool empty = with_empty && f % 7 == 3;
    for (std::size_t dr = 0; dr < sh.det_rows; ++dr)
      for (std::size_t dc = 0; dc < sh.det_cols; ++dc) {
        const double d2 = (dr - cr) * (dr - cr) + (dc - cc) * (dc - cc);
        const double mean = empty ? 0.0 : (d2 < rad * rad ? peak : 0.02 * peak);
        long long v = 0;
        if (mean > 0) v = std::poisson_distribution<long long>(mean)(rng);
        const long long maxv = static_cast<long long>(std::numeric_limits<T>::max());
        p[i++] = static_cast<T>(std::min(v, maxv));
      }
  }
  Provenance pv;
  pv.operation = "test.poisson";
  pv.backend = "cpu";
  return Dataset::from_host(std::move(h), nlohmann::json::object(), pv);
}

inline Image<float> image(std::size_t rows, std::size_t cols) {
  Image<float> im;
  im.rows = rows;
  im.cols = cols;
  im.data.assign(rows * cols, 0.0f);
  return im;
}

// phi(x, y) = ramp_r * x + ramp_c * y + sum_k a_k exp(-((x - x_k)^2 + (y - y_k)^2) / (2 s_k^2)) with
// x = row * step_row, y = col * step_col, and its exact gradient (d phi / dx, d phi / dy).
struct AnalyticField {
  Image<float> phi, grad_row, grad_col;
};

inline AnalyticField gaussian_field(std::size_t rows, std::size_t cols, std::uint32_t seed, double ramp_r = 0,
                                    double ramp_c = 0, double step_row = 1, double step_col = 1,
                                    int n_peaks = 12) {
  struct Peak {
    double x, y, s, a;
  };
  std::mt19937 rng(seed);
  const double lx = rows * step_row, ly = cols * step_col;
  // Widths: 4-7 % of the smaller side, and at least 2.5 samples along the coarser axis (well sampled).
  const double s0 = std::max(0.04 * std::min(lx, ly), 2.5 * std::max(step_row, step_col));
  std::uniform_real_distribution<double> ux(0.2 * lx, 0.8 * lx), uy(0.2 * ly, 0.8 * ly), us(s0, 1.75 * s0),
      ua(0.5, 1.5);
  std::vector<Peak> peaks;
  for (int k = 0; k < n_peaks; ++k) peaks.push_back({ux(rng), uy(rng), us(rng), ua(rng)});
  AnalyticField f{image(rows, cols), image(rows, cols), image(rows, cols)};
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double x = r * step_row, y = c * step_col;
      double v = ramp_r * x + ramp_c * y, gx = ramp_r, gy = ramp_c;
      for (const Peak& p : peaks) {
        const double e = p.a * std::exp(-((x - p.x) * (x - p.x) + (y - p.y) * (y - p.y)) / (2 * p.s * p.s));
        v += e;
        gx += -e * (x - p.x) / (p.s * p.s);
        gy += -e * (y - p.y) / (p.s * p.s);
      }
      f.phi.at(r, c) = float(v);
      f.grad_row.at(r, c) = float(gx);
      f.grad_col.at(r, c) = float(gy);
    }
  return f;
}

// ||a - mean(a) - (b - mean(b))|| / ||b - mean(b)||: agreement up to a constant.
inline double relative_error_up_to_constant(const Image<float>& a, const Image<float>& b) {
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    ma += a.data[i];
    mb += b.data[i];
  }
  ma /= double(a.data.size());
  mb /= double(b.data.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const double d = (a.data[i] - ma) - (b.data[i] - mb);
    num += d * d;
    den += (b.data[i] - mb) * (b.data[i] - mb);
  }
  return std::sqrt(num / den);
}

inline double correlation(const Image<float>& a, const Image<float>& b) {
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    ma += a.data[i];
    mb += b.data[i];
  }
  ma /= double(a.data.size());
  mb /= double(b.data.size());
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    sab += (a.data[i] - ma) * (b.data[i] - mb);
    saa += (a.data[i] - ma) * (a.data[i] - ma);
    sbb += (b.data[i] - mb) * (b.data[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

// ||a - b|| / ||b||.
inline double relative_difference(const Image<float>& a, const Image<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    num += (double(a.data[i]) - b.data[i]) * (double(a.data[i]) - b.data[i]);
    den += double(b.data[i]) * b.data[i];
  }
  return std::sqrt(num / den);
}

}  // namespace qgpu::dpc::testing
