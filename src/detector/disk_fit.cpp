#include "detector/disk_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "core/numbers.hpp"
#include "core/error.hpp"

namespace qgpu::detector {

namespace {

constexpr int kLevels = 49;                // thresholds 2 % .. 98 % of the top level
constexpr double kLevelStep = 0.02;
constexpr double kMinSpan = 0.06;          // a plateau spans >= 6 % of the top level (3 levels)
constexpr double kFullContrast = 0.3;      // an edge dropping >= 30 % of the top level has full contrast
constexpr std::size_t kMinEdgePoints = 8;
constexpr std::size_t kBinnedSide = 256;   // larger detectors: levels found on the pattern binned to <= 256
constexpr double kMinBinnedRadius = 6;     // binned pixels: smaller disks are fitted at full resolution
constexpr int kRefineLevels = 5;
constexpr double kMinArea = 16;            // pixels: the smallest disk found has a radius of about 2.5 px
constexpr double kMinCoverage = 0.5;       // the region holds >= half the pixels above its level

const char* const kMethod =
    "summed pattern thresholded at 2..98 % of its top level (3x3 median); circle fitted to the edge of the bright "
    "region at each level; the innermost edge holding over >= 6 % of the top level";

// Median of 9 values: the exchange network of Paeth / Devillard (19 compare-exchanges).
double median9(double* p) {
  const auto sort2 = [p](int a, int b) {
    if (p[a] > p[b]) std::swap(p[a], p[b]);
  };
  sort2(1, 2), sort2(4, 5), sort2(7, 8), sort2(0, 1), sort2(3, 4), sort2(6, 7), sort2(1, 2), sort2(4, 5);
  sort2(7, 8), sort2(0, 3), sort2(5, 8), sort2(4, 7), sort2(3, 6), sort2(1, 4), sort2(2, 5), sort2(4, 7);
  sort2(4, 2), sort2(6, 4), sort2(4, 2);
  return p[4];
}

// 3x3 median (the window clipped at the detector border).
std::vector<double> median3(const std::vector<double>& v, std::size_t rows, std::size_t cols) {
  std::vector<double> out(v.size());
  double w[9];
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      if (r > 0 && c > 0 && r + 1 < rows && c + 1 < cols) {
        for (int k = 0; k < 9; ++k) w[k] = v[(r + k / 3 - 1) * cols + c + k % 3 - 1];
        out[r * cols + c] = median9(w);
        continue;
      }
      int n = 0;
      for (std::size_t rr = (r ? r - 1 : 0); rr <= std::min(rows - 1, r + 1); ++rr)
        for (std::size_t cc = (c ? c - 1 : 0); cc <= std::min(cols - 1, c + 1); ++cc) w[n++] = v[rr * cols + cc];
      std::nth_element(w, w + n / 2, w + n);
      double m = w[n / 2];
      if (n % 2 == 0) m = 0.5 * (m + *std::max_element(w, w + n / 2));  // even window at a border: mean of the middle two
      out[r * cols + c] = m;
    }
  return out;
}

struct Level {
  bool round = false;
  double r = 0, cr = 0, cc = 0, rms = 0;
  double pixels = 0;  // in the region (before filling holes)
};

// The region above `thr` holding `seed` (4-connected, holes filled) and the circle fitted to its edge.
class LevelFitter {
 public:
  LevelFitter(const std::vector<double>& m, std::size_t rows, std::size_t cols, std::size_t seed)
      : m_(m), rows_(rows), cols_(cols), seed_(seed), in_(m.size(), 0), out_(m.size(), 0) {}

  Level fit(double thr) {
    ++stamp_;
    // Region: flood from the seed over pixels >= thr.
    std::size_t r0 = rows_, r1 = 0, c0 = cols_, c1 = 0;
    stack_.assign(1, seed_);
    in_[seed_] = stamp_;
    double pixels = 0;
    while (!stack_.empty()) {
      const std::size_t i = stack_.back();
      stack_.pop_back();
      pixels += 1;
      const std::size_t r = i / cols_, c = i % cols_;
      r0 = std::min(r0, r), r1 = std::max(r1, r), c0 = std::min(c0, c), c1 = std::max(c1, c);
      const auto visit = [&](std::size_t j) {
        if (in_[j] != stamp_ && m_[j] >= thr) {
          in_[j] = stamp_;
          stack_.push_back(j);
        }
      };
      if (r > 0) visit(i - cols_);
      if (r + 1 < rows_) visit(i + cols_);
      if (c > 0) visit(i - 1);
      if (c + 1 < cols_) visit(i + 1);
    }
    // Outside: flood the pixels not in the region from the border of the region's box grown by one pixel (clipped
    // to the detector, so anything open to the detector border is outside). The filled region = box minus outside.
    const std::size_t R0 = r0 ? r0 - 1 : 0, R1 = std::min(rows_ - 1, r1 + 1);
    const std::size_t C0 = c0 ? c0 - 1 : 0, C1 = std::min(cols_ - 1, c1 + 1);
    stack_.clear();
    const auto seed_out = [&](std::size_t r, std::size_t c) {
      const std::size_t j = r * cols_ + c;
      if (in_[j] != stamp_ && out_[j] != stamp_) {
        out_[j] = stamp_;
        stack_.push_back(j);
      }
    };
    for (std::size_t c = C0; c <= C1; ++c) seed_out(R0, c), seed_out(R1, c);
    for (std::size_t r = R0; r <= R1; ++r) seed_out(r, C0), seed_out(r, C1);
    while (!stack_.empty()) {
      const std::size_t i = stack_.back();
      stack_.pop_back();
      const std::size_t r = i / cols_, c = i % cols_;
      if (r > R0) seed_out(r - 1, c);
      if (r < R1) seed_out(r + 1, c);
      if (c > C0) seed_out(r, c - 1);
      if (c < C1) seed_out(r, c + 1);
    }
    const auto filled = [&](std::size_t r, std::size_t c) {
      return r >= R0 && r <= R1 && c >= C0 && c <= C1 && out_[r * cols_ + c] != stamp_;
    };
    // Edge points: midpoints between a filled pixel and its 4-neighbours outside (none at the detector border).
    // Least-squares circle (Kasa) in coordinates relative to the box centre.
    const double orow = 0.5 * double(R0 + R1), ocol = 0.5 * double(C0 + C1);
    std::vector<std::pair<double, double>>& pts = pts_;
    pts.clear();
    double area = 0;
    int sides = 0;  // detector sides the region reaches (bits: top, bottom, left, right): the disk may be cut
    for (std::size_t r = R0; r <= R1; ++r)
      for (std::size_t c = C0; c <= C1; ++c) {
        if (!filled(r, c)) continue;
        area += 1;
        const double y = double(r) - orow, x = double(c) - ocol;
        sides |= (r == 0 ? 1 : 0) | (r + 1 == rows_ ? 2 : 0) | (c == 0 ? 4 : 0) | (c + 1 == cols_ ? 8 : 0);
        if (r > 0 && !filled(r - 1, c)) pts.emplace_back(y - 0.5, x);
        if (r + 1 < rows_ && !filled(r + 1, c)) pts.emplace_back(y + 0.5, x);
        if (c > 0 && !filled(r, c - 1)) pts.emplace_back(y, x - 0.5);
        if (c + 1 < cols_ && !filled(r, c + 1)) pts.emplace_back(y, x + 0.5);
      }
    Level L;
    L.pixels = pixels;
    // Too few pixels (noise at the top of a small disk), or a region over the whole detector: no disk.
    if (area < kMinArea || pts.size() < kMinEdgePoints || sides == 15) return L;
    const double n = double(pts.size());
    double my = 0, mx = 0;
    for (const auto& [y, x] : pts) my += y, mx += x;
    my /= n, mx /= n;
    double syy = 0, sxx = 0, sxy = 0, syz = 0, sxz = 0, sz = 0;
    for (const auto& [py, px] : pts) {
      const double y = py - my, x = px - mx, z = y * y + x * x;
      syy += y * y, sxx += x * x, sxy += x * y, syz += y * z, sxz += x * z, sz += z;
    }
    const double det = sxx * syy - sxy * sxy;
    if (!(std::abs(det) > 1e-9 * (sxx * syy + 1e-300))) return L;  // collinear edge points: no circle
    // [sxx sxy; sxy syy] [D; E] = -[sxz; syz], F = -sz / n; centre (-E/2, -D/2) in (y, x), r^2 = |centre|^2 - F.
    const double D = (-sxz * syy + syz * sxy) / det, E = (-syz * sxx + sxz * sxy) / det;
    const double cy = -0.5 * E, cx = -0.5 * D, r2 = cy * cy + cx * cx + sz / n;
    if (!(r2 > 0.25) || !std::isfinite(r2)) return L;
    L.r = std::sqrt(r2);
    L.cr = cy + my + orow;
    L.cc = cx + mx + ocol;
    double ss = 0;
    for (const auto& [py, px] : pts) {
      const double d = std::hypot(py - my - cy, px - mx - cx) - L.r;
      ss += d * d;
    }
    L.rms = std::sqrt(ss / n);
    if (!(L.rms <= 0.1 * L.r + 0.5)) return L;
    // Consistency: the region's area is that of the fitted circle on the detector (pixel centres inside).
    double expect = 0;
    const double lo_r = std::max(0.0, std::ceil(L.cr - L.r)), hi_r = std::min(double(rows_) - 1, std::floor(L.cr + L.r));
    const double lo_c = std::max(0.0, std::ceil(L.cc - L.r)), hi_c = std::min(double(cols_) - 1, std::floor(L.cc + L.r));
    for (double r = lo_r; r <= hi_r; r += 1) {
      const double h2 = L.r * L.r - (r - L.cr) * (r - L.cr);
      if (h2 < 0) continue;
      const double h = std::sqrt(h2);
      const double a = std::max(lo_c, std::ceil(L.cc - h)), b = std::min(hi_c, std::floor(L.cc + h));
      if (b >= a) expect += b - a + 1;
    }
    L.round = expect > 0 && std::abs(area - expect) <= 0.15 * expect + 3;
    // The radius: of the equal area when the whole region is on the detector (unbiased for a small disk too), else
    // of the circle fitted to the edge.
    if (!sides) L.r = std::sqrt(area / kPi);
    return L;
  }

 private:
  const std::vector<double>& m_;
  std::size_t rows_, cols_, seed_;
  std::vector<std::uint32_t> in_, out_;
  std::uint32_t stamp_ = 0;
  std::vector<std::size_t> stack_;
  std::vector<std::pair<double, double>> pts_;
};

struct Plateau {
  int first = 0, last = 0;  // level indices
  double r = 0, cr = 0, cc = 0, rms = 0;
  double span() const { return double(last - first + 1) * kLevelStep; }
  double level_low() const { return (first + 1) * kLevelStep; }
  double level_high() const { return (last + 1) * kLevelStep; }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs of round levels along which the radius and centre move little from level to level (<= max(0.35 px, 2.5 % r))
// and in all (<= max(1.5 px, 8 % r)): a sharp edge.
std::vector<Plateau> plateaus(const std::vector<Level>& lv) {
  std::vector<Plateau> out;
  for (int s = 0; s < kLevels;) {
    if (!lv[s].round) {
      ++s;
      continue;
    }
    double rlo = lv[s].r, rhi = rlo;
    int e = s;
    while (e + 1 < kLevels && lv[e + 1].round) {
      const Level &a = lv[e], &b = lv[e + 1];
      const double step = std::max(0.35, 0.025 * a.r), total = std::max(1.5, 0.08 * a.r);
      const double lo = std::min(rlo, b.r), hi = std::max(rhi, b.r);
      if (std::abs(b.r - a.r) > step || std::hypot(b.cr - a.cr, b.cc - a.cc) > step || hi - lo > total) break;
      rlo = lo, rhi = hi;
      ++e;
    }
    Plateau p;
    p.first = s;
    p.last = e;
    std::vector<double> r, y, x, q;
    for (int k = s; k <= e; ++k) r.push_back(lv[k].r), y.push_back(lv[k].cr), x.push_back(lv[k].cc), q.push_back(lv[k].rms);
    p.r = median(r), p.cr = median(y), p.cc = median(x), p.rms = median(q);
    out.push_back(p);
    s = e + 1;
  }
  return out;
}

struct Edge {
  const Plateau* main = nullptr;  // the widest plateau of the edge: its circle
  int first = 0, last = 0;        // level indices
  double levels = 0;              // round levels in the edge's plateaus
  double span() const { return levels * kLevelStep; }
};

std::vector<Edge> group_edges(const std::vector<Plateau>& ps) {
  std::vector<Edge> out;
  for (const Plateau& p : ps) {
    if (!out.empty()) {
      Edge& e = out.back();
      const double tol = std::max(2.0, 0.15 * e.main->r);
      if (std::abs(p.r - e.main->r) <= tol && std::hypot(p.cr - e.main->cr, p.cc - e.main->cc) <= tol) {
        e.last = p.last;
        e.levels += double(p.last - p.first + 1);
        if (p.span() > e.main->span()) e.main = &p;
        continue;
      }
    }
    out.push_back(Edge{&p, p.first, p.last, double(p.last - p.first + 1)});
  }
  return out;
}

const char* const kNoDisk =
    "; give the disk centre and radius (qgpu: --center ROW COL --radius R; Python: center=, radius=)";

struct PatternFit {
  DiskFit fit;
  double top = 0;         // the top level
  std::size_t seed = 0;   // the pixel every level's region holds
};

// The fit on one pattern of rows x cols values (see disk_fit.hpp).
PatternFit fit_pattern(const std::vector<double>& v, std::size_t rows, std::size_t cols) {
  // The top level and the seed pixel from the 3x3 median (a hot pixel or a 2x2 hot cluster cannot set them); a disk
  // of a few pixels that the median removes: from the raw sums.
  const std::vector<double> m = median3(v, rows, cols);
  std::size_t seed = std::size_t(std::max_element(m.begin(), m.end()) - m.begin());
  if (!(m[seed] > 0)) seed = std::size_t(std::max_element(v.begin(), v.end()) - v.begin());
  const double top = m[seed] > 0 ? m[seed] : v[seed];

  // Levels on the raw sums (the median would eat a small disk); the region must hold most pixels above the level
  // (noise fragments at the top of a noisy disk do not).
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  LevelFitter fitter(v, rows, cols, seed);
  std::vector<Level> lv(kLevels);
  for (int i = 0; i < kLevels; ++i) {
    const double thr = double(i + 1) * kLevelStep * top;
    const double above = double(sorted.end() - std::lower_bound(sorted.begin(), sorted.end(), thr));
    lv[i] = fitter.fit(thr);
    if (lv[i].round && !(lv[i].pixels >= kMinCoverage * above)) lv[i].round = false;
  }
  const std::vector<Plateau> ps = plateaus(lv);
  // Edges: neighbouring plateaus with about the same circle (within max(2 px, 15 % r)) are one edge (noise splits
  // an edge's plateau where it erodes near the top). The disk is the edge at the highest levels spanning >= kMinSpan
  // (a lobe around the disk holds at lower levels).
  const std::vector<Edge> edges = group_edges(ps);
  const Edge* best = nullptr;
  for (const Edge& e : edges)
    if (e.span() >= kMinSpan - 1e-9) best = &e;
  if (!best)
    throw InvalidArgument(std::string("cannot find the bright-field disk: no round edge holds over 3 thresholds of "
                                      "the summed pattern (2..98 % of its top level)") + kNoDisk);
  const Plateau& disk = *best->main;
  PatternFit out;
  out.top = top;
  out.seed = seed;
  DiskFit& f = out.fit;
  f.center_row = disk.cr;
  f.center_col = disk.cc;
  f.radius = disk.r;
  f.level_low = (best->first + 1) * kLevelStep;
  f.level_high = (best->last + 1) * kLevelStep;
  f.method = kMethod;
  const double contrast = std::min(1.0, best->span() / kFullContrast);
  const double roundness = std::clamp(1.0 - std::max(0.0, disk.rms - 0.5) / (0.1 * disk.r + 0.5), 0.0, 1.0);
  // Uniqueness: a wider other edge makes the choice less certain; an edge inside (at higher levels) too short to
  // be taken, more so.
  double unique = 1;
  const Edge* other = nullptr;
  for (const Edge& e : edges)
    if (&e != best && (!other || e.span() > other->span())) other = &e;
  if (other) {
    f.other_radius = other->main->r;
    unique = std::min(1.0, best->span() / other->span());
  }
  for (const Edge& e : edges)
    if (e.first > best->last && e.span() >= 2 * kLevelStep - 1e-9) {
      f.other_radius = e.main->r;
      unique = std::min(unique, 0.4);
    }
  f.confidence = contrast * roundness * unique;
  return out;
}

// A large detector: the fit on the pattern binned b x b (rows and cols beyond whole blocks left out), then the
// circle at full resolution at 5 levels inside the binned fit's edge. Empty when the binned fit finds no disk of
// >= kMinBinnedRadius binned pixels (then the caller fits at full resolution).
std::optional<DiskFit> fit_binned(const std::vector<double>& v, std::size_t rows, std::size_t cols, std::size_t b) {
  const std::size_t br = rows / b, bc = cols / b;
  std::vector<double> vb(br * bc, 0.0);
  for (std::size_t r = 0; r < br * b; ++r)
    for (std::size_t c = 0; c < bc * b; ++c) vb[(r / b) * bc + c / b] += v[r * cols + c];
  PatternFit coarse;
  try {
    coarse = fit_pattern(vb, br, bc);
  } catch (const InvalidArgument&) {
    return std::nullopt;
  }
  if (coarse.fit.radius < kMinBinnedRadius) return std::nullopt;
  DiskFit f = coarse.fit;
  const double half = 0.5 * double(b - 1), scale = double(b);
  f.center_row = f.center_row * scale + half;
  f.center_col = f.center_col * scale + half;
  f.radius *= scale;
  // Full resolution: the seed is the brightest pixel of the binned seed's block; levels from high to low.
  const std::size_t sr = coarse.seed / bc, sc = coarse.seed % bc;
  std::size_t seed = sr * b * cols + sc * b;
  for (std::size_t r = sr * b; r < sr * b + b; ++r)
    for (std::size_t c = sc * b; c < sc * b + b; ++c)
      if (v[r * cols + c] > v[seed]) seed = r * cols + c;
  LevelFitter fitter(v, rows, cols, seed);
  std::vector<double> rs, ys, xs;
  for (int k = 0; k < kRefineLevels; ++k) {
    const double t = f.level_low + (f.level_high - f.level_low) * (0.2 + 0.6 * k / (kRefineLevels - 1));
    const double thr = t * coarse.top / (scale * scale);
    const Level L = fitter.fit(thr);
    double above = 0;
    for (double x : v) above += x >= thr ? 1 : 0;
    if (L.round && L.pixels >= kMinCoverage * above) rs.push_back(L.r), ys.push_back(L.cr), xs.push_back(L.cc);
  }
  const double tol = std::max(2.0 * scale, 0.1 * f.radius);
  if (rs.size() * 2 > std::size_t(kRefineLevels) && std::abs(median(rs) - f.radius) <= tol &&
      std::hypot(median(ys) - f.center_row, median(xs) - f.center_col) <= tol) {
    f.radius = median(rs);
    f.center_row = median(ys);
    f.center_col = median(xs);
    f.method = std::string(kMethod) + "; levels found on the pattern binned " + std::to_string(b) + "x" +
               std::to_string(b) + ", the circle at full resolution";
  } else {
    f.method = std::string(kMethod) + "; on the pattern binned " + std::to_string(b) + "x" + std::to_string(b) +
               " (the full-resolution circle did not hold)";
  }
  if (f.other_radius > 0) f.other_radius *= scale;
  return f;
}

}  // namespace

DiskFit fit_bf_disk(const SumImage& sum) {
  const std::size_t rows = sum.rows(), cols = sum.cols(), n = rows * cols;
  std::vector<double> v;
  sum.visit([&](const auto& img) { v.assign(img.data.begin(), img.data.end()); });
  if (n == 0 || v.size() != n) throw InvalidArgument("cannot find the bright-field disk: the pattern is empty");
  if (n >= (std::size_t(1) << 32)) throw InvalidArgument("cannot find the bright-field disk: the detector is too large");
  if (!(*std::max_element(v.begin(), v.end()) > 0))
    throw InvalidArgument("cannot find the bright-field disk: the dataset holds no counts (no positive sum)");
  const std::size_t b = (std::max(rows, cols) + kBinnedSide - 1) / kBinnedSide;
  if (b > 1)
    if (std::optional<DiskFit> f = fit_binned(v, rows, cols, b)) return *f;
  return fit_pattern(v, rows, cols).fit;
}

std::string DiskFit::warning() const {
  if (confident()) return "";
  char buf[160];
  std::string why;
  if (level_high - level_low + kLevelStep < 0.5 * kFullContrast) {
    std::snprintf(buf, sizeof buf, "; its edge is faint (it holds only between %d and %d %% of the top level)",
                  int(std::lround(level_low * 100)), int(std::lround(level_high * 100)));
    why += buf;
  }
  if (other_radius > 0) {
    std::snprintf(buf, sizeof buf, "; another edge at radius %.1f px%s", other_radius,
                  other_radius > radius ? " (e.g. a diffuse lobe around the disk)" : " inside it");
    why += buf;
  }
  std::snprintf(buf, sizeof buf, "confidence %.2f: centre (%.1f, %.1f), radius %.1f px", confidence, center_row,
                center_col, radius);
  return "the bright-field disk fit is uncertain (" + std::string(buf) + why +
         "); check the mean pattern (qgpu image --mean) and give the disk centre and radius (--center ROW COL "
         "--radius R; Python center=, radius=)";
}

DiskFit disk_with_overrides(const std::optional<std::pair<double, double>>& center, const std::optional<double>& radius,
                            const std::function<DiskFit()>& fit) {
  DiskFit d;
  if (center && radius) {
    d.confidence = 1;
    d.method = "given";
  } else {
    d = fit();
    if (center || radius) d.method += center ? "; centre given" : "; radius given";
  }
  if (center) d.center_row = center->first, d.center_col = center->second, d.center_given = true;
  if (radius) d.radius = *radius, d.radius_given = true;
  return d;
}

nlohmann::json fit_json(const DiskFit& f) {
  if (f.center_given && f.radius_given)
    return {{"center", {f.center_row, f.center_col}}, {"radius", f.radius}, {"center_source", "given"},
            {"radius_source", "given"}};
  nlohmann::json j = {{"center", {f.center_row, f.center_col}},
                      {"radius", f.radius},
                      {"center_source", f.center_given ? "given" : "fitted"},
                      {"radius_source", f.radius_given ? "given" : "fitted"},
                      {"confidence", f.confidence},
                      {"confident", f.confident()},
                      {"edge_levels", {f.level_low, f.level_high}},
                      {"method", f.method}};
  if (f.other_radius > 0) j["other_edge_radius"] = f.other_radius;
  if (!f.confident()) j["warning"] = f.warning();
  return j;
}

}  // namespace qgpu::detector
