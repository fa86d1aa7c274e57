// TPE + Nelder-Mead, all in normalised coordinates u in [0, 1]^d (x = lo + u (hi - lo)).
//
// TPE step (Bergstra et al. 2011, the univariate-bandwidth, joint-kernel variant): sort the evaluations by loss,
// the best ceil(gamma n) are "good", the rest "bad"; l(u) and g(u) are Gaussian product-kernel densities over
// each set plus one uniform prior component; `candidates` points are drawn from l and the one maximising
// l(u) / g(u) is evaluated next. Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5) starts from
// the best point with a simplex of edge 0.05 (pointing into the box) and stops when the budget is spent or the
// simplex has collapsed (edge < 1e-7).
#include "ssb/optimize.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/numbers.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"

namespace qgpu::ssb::detail {

namespace {

using Point = std::vector<double>;

// Gaussian product-kernel density with one uniform prior component over [0, 1]^d.
struct Parzen {
  std::vector<Point> centres;
  Point h;  // bandwidth per dimension

  Parzen(std::vector<Point> pts, std::size_t d) : centres(std::move(pts)), h(d) {
    const double m = double(centres.size());
    for (std::size_t k = 0; k < d; ++k) {
      double mean = 0, var = 0;
      for (const Point& p : centres) mean += p[k];
      mean /= m;
      for (const Point& p : centres) var += (p[k] - mean) * (p[k] - mean);
      const double sd = centres.size() > 1 ? std::sqrt(var / (m - 1)) : 0.5;
      h[k] = std::clamp(1.06 * sd * std::pow(m, -1.0 / (double(d) + 4)), 0.01, 0.5);  // Scott, clipped
    }
  }
  double log_density(const Point& u) const {
    double sum = 1.0;  // the uniform component
    for (const Point& c : centres) {
      double e = 0, norm = 1;
      for (std::size_t k = 0; k < u.size(); ++k) {
        const double z = (u[k] - c[k]) / h[k];
        e += z * z;
        norm *= 2.5066282746310002 * h[k];
      }
      sum += std::exp(-0.5 * e) / norm;
    }
    return std::log(sum / double(centres.size() + 1));
  }
  Point sample(Rng& rng) const {
    const std::size_t pick = rng.index(centres.size() + 1);
    Point u(h.size());
    for (std::size_t k = 0; k < u.size(); ++k) {
      if (pick == centres.size()) {
        u[k] = rng.uniform();
        continue;
      }
      double v = centres[pick][k] + h[k] * rng.normal();
      if (v < 0) v = -v;  // reflect into the box
      if (v > 1) v = 2 - v;
      u[k] = std::clamp(v, 0.0, 1.0);
    }
    return u;
  }
};

}  // namespace

OptimizeResult minimize_tpe_nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                        const std::vector<double>& lo, const std::vector<double>& hi,
                                        const TpeOptions& o) {
  const std::size_t d = lo.size();
  if (d == 0 || hi.size() != d) throw InvalidArgument("optimize: empty or mismatched bounds");
  for (std::size_t k = 0; k < d; ++k)
    if (!(lo[k] < hi[k]) || !std::isfinite(lo[k]) || !std::isfinite(hi[k]))
      throw InvalidArgument("optimize: every lower bound must be finite and below its upper bound");
  if (o.trials == 0) throw InvalidArgument("optimize: trials must be >= 1");
  if (o.tpe_trials > o.trials) throw InvalidArgument("optimize: tpe_trials exceeds trials");
  if (!(o.gamma > 0 && o.gamma < 1)) throw InvalidArgument("optimize: gamma must lie in (0, 1)");

  OptimizeResult r;
  std::vector<Point> us;  // normalised points of the history
  auto evaluate = [&](const Point& u, bool nm) {
    Point x(d);
    for (std::size_t k = 0; k < d; ++k) x[k] = lo[k] + std::clamp(u[k], 0.0, 1.0) * (hi[k] - lo[k]);
    double l = f(x);
    if (!std::isfinite(l)) l = std::numeric_limits<double>::max();
    if (r.history.empty() || l < r.best_loss) {
      r.best_loss = l;
      r.best_x = x;
    }
    r.history.push_back({x, l, nm});
    us.push_back(u);
    return l;
  };

  Rng rng(o.seed);
  const std::size_t tpe = std::max<std::size_t>(o.tpe_trials, 1);
  const std::size_t startup =
      std::min(tpe, o.n_startup ? o.n_startup : std::max<std::size_t>(2 * d + 4, tpe / 5));
  for (std::size_t t = 0; t < tpe && r.history.size() < o.trials; ++t) {
    if (t < startup) {
      Point u(d);
      for (double& v : u) v = rng.uniform();
      evaluate(u, false);
      continue;
    }
    std::vector<std::size_t> order(us.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return r.history[a].loss < r.history[b].loss; });
    const std::size_t n_good = std::max<std::size_t>(1, std::size_t(std::ceil(o.gamma * double(order.size()))));
    std::vector<Point> good, bad;
    for (std::size_t i = 0; i < order.size(); ++i) (i < n_good ? good : bad).push_back(us[order[i]]);
    const Parzen l(good, d), g(bad.empty() ? good : bad, d);
    Point best_u;
    double best_score = -std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < std::max<std::size_t>(o.candidates, 1); ++c) {
      Point u = l.sample(rng);
      const double score = l.log_density(u) - g.log_density(u);
      if (score > best_score) {
        best_score = score;
        best_u = std::move(u);
      }
    }
    evaluate(best_u, false);
  }

  // Nelder-Mead from the best point so far.
  std::size_t best_i = 0;
  for (std::size_t i = 1; i < r.history.size(); ++i)
    if (r.history[i].loss < r.history[best_i].loss) best_i = i;
  std::vector<Point> simplex{us[best_i]};
  std::vector<double> fs{r.history[best_i].loss};
  auto budget = [&] { return r.history.size() < o.trials; };
  for (std::size_t k = 0; k < d && budget(); ++k) {
    Point u = us[best_i];
    u[k] += u[k] + 0.05 <= 1 ? 0.05 : -0.05;
    fs.push_back(evaluate(u, true));
    simplex.push_back(std::move(u));
  }
  auto clamp_point = [](Point u) {
    for (double& v : u) v = std::clamp(v, 0.0, 1.0);
    return u;
  };
  auto along = [&](const Point& centroid, const Point& worst, double t) {
    Point u(d);
    for (std::size_t k = 0; k < d; ++k) u[k] = centroid[k] + t * (worst[k] - centroid[k]);
    return clamp_point(std::move(u));
  };
  while (simplex.size() == d + 1 && budget()) {
    std::vector<std::size_t> idx(d + 1);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return fs[a] < fs[b]; });
    std::vector<Point> s2;
    std::vector<double> f2;
    for (std::size_t i : idx) {
      s2.push_back(simplex[i]);
      f2.push_back(fs[i]);
    }
    simplex.swap(s2);
    fs.swap(f2);
    double size = 0;
    for (std::size_t i = 1; i <= d; ++i)
      for (std::size_t k = 0; k < d; ++k) size = std::max(size, std::abs(simplex[i][k] - simplex[0][k]));
    if (size < 1e-7) break;
    Point centroid(d, 0.0);
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t k = 0; k < d; ++k) centroid[k] += simplex[i][k] / double(d);
    const Point& worst = simplex[d];
    const Point xr = along(centroid, worst, -1.0);
    const double fr = evaluate(xr, true);
    if (fr < fs[0]) {
      if (!budget()) {
        simplex[d] = xr, fs[d] = fr;
        break;
      }
      const Point xe = along(centroid, worst, -2.0);
      const double fe = evaluate(xe, true);
      if (fe < fr) simplex[d] = xe, fs[d] = fe;
      else simplex[d] = xr, fs[d] = fr;
      continue;
    }
    if (fr < fs[d - 1]) {
      simplex[d] = xr, fs[d] = fr;
      continue;
    }
    if (!budget()) break;
    const bool outside = fr < fs[d];
    const Point xc = along(centroid, worst, outside ? -0.5 : 0.5);
    const double fc = evaluate(xc, true);
    if (fc < std::min(fr, fs[d])) {
      simplex[d] = xc, fs[d] = fc;
      continue;
    }
    for (std::size_t i = 1; i <= d && budget(); ++i) {  // shrink towards the best
      for (std::size_t k = 0; k < d; ++k) simplex[i][k] = simplex[0][k] + 0.5 * (simplex[i][k] - simplex[0][k]);
      fs[i] = evaluate(simplex[i], true);
    }
  }
  return r;
}

OptimizeResult minimize_staged_astigmatism(const std::function<double(const std::vector<double>&)>& f,
                                           const std::vector<double>& lo, const std::vector<double>& hi,
                                           std::size_t trials) {
  if (lo.size() != 3 || hi.size() != 3) throw InvalidArgument("optimize: the astigmatism search is 3-dimensional");
  for (std::size_t k = 0; k < 3; ++k)
    if (!(lo[k] < hi[k]) || !std::isfinite(lo[k]) || !std::isfinite(hi[k]))
      throw InvalidArgument("optimize: every lower bound must be finite and below its upper bound");
  if (trials == 0) throw InvalidArgument("optimize: trials must be >= 1");
  OptimizeResult r;
  auto evaluate = [&](Point x, bool nm) {
    for (std::size_t k = 0; k < 3; ++k) x[k] = std::clamp(x[k], lo[k], hi[k]);
    double l = f(x);
    if (!std::isfinite(l)) l = std::numeric_limits<double>::max();
    if (r.history.empty() || l < r.best_loss) {
      r.best_loss = l;
      r.best_x = x;
    }
    r.history.push_back({x, l, nm});
    return l;
  };
  auto budget = [&] { return r.history.size() < trials; };
  // (1) C1 grid
  const std::size_t n1 = std::clamp<std::size_t>(trials / 4, 3, 101);
  const double c1_step = (hi[0] - lo[0]) / double(n1 - 1);
  for (std::size_t i = 0; i < n1 && budget(); ++i) evaluate({lo[0] + double(i) * c1_step, 0.0, 0.0}, false);
  const double c1_best = r.best_x[0];
  // (2) polar A1 grid at the best C1
  const double a1_range = std::min({hi[1], -lo[1], hi[2], -lo[2]});
  const std::size_t angles = trials >= 150 ? 12 : 6;
  const std::vector<double> mags = trials >= 150 ? std::vector<double>{0.04, 0.08, 0.16, 0.32, 0.64}
                                                 : std::vector<double>{0.08, 0.24, 0.64};
  for (double m : mags)
    for (std::size_t a = 0; a < angles && budget(); ++a) {
      const double two_a = 2.0 * kPi * double(a) / double(2 * angles);  // angle a * 180 / angles
      evaluate({c1_best, m * a1_range * std::cos(two_a), m * a1_range * std::sin(two_a)}, false);
    }
  // (3) Nelder-Mead from the 3 best distinct starts (distinct: apart by more than the initial simplex)
  std::vector<std::size_t> order(r.history.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return r.history[a].loss < r.history[b].loss; });
  const double step[3] = {std::max(c1_step, 1e-3), 0.04 * a1_range, 0.04 * a1_range};
  std::vector<Point> starts;
  std::vector<double> start_loss;
  for (std::size_t i : order) {
    const Point& x = r.history[i].x;
    bool near = false;
    for (const Point& y : starts)
      near = near || (std::abs(x[0] - y[0]) <= step[0] && std::hypot(x[1] - y[1], x[2] - y[2]) <= 2 * step[1]);
    if (!near) starts.push_back(x), start_loss.push_back(r.history[i].loss);
    if (starts.size() == 3) break;
  }
  for (std::size_t si = 0; si < starts.size(); ++si) {
    const std::size_t left = trials > r.history.size() ? trials - r.history.size() : 0;
    const std::size_t stop = r.history.size() + left / (starts.size() - si);
    auto mine = [&] { return r.history.size() < stop; };
    std::vector<Point> simplex{starts[si]};
    std::vector<double> fs;
    fs.push_back(start_loss[si]);
    for (std::size_t k = 0; k < 3 && mine(); ++k) {
      Point x = starts[si];
      x[k] += x[k] + step[k] <= hi[k] ? step[k] : -step[k];
      fs.push_back(evaluate(x, true));
      simplex.push_back(x);
    }
    while (simplex.size() == 4 && mine()) {
      std::vector<std::size_t> idx{0, 1, 2, 3};
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return fs[a] < fs[b]; });
      std::vector<Point> s2;
      std::vector<double> f2;
      for (std::size_t i : idx) s2.push_back(simplex[i]), f2.push_back(fs[i]);
      simplex.swap(s2);
      fs.swap(f2);
      double size = 0;
      for (std::size_t i = 1; i < 4; ++i)
        for (std::size_t k = 0; k < 3; ++k) size = std::max(size, std::abs(simplex[i][k] - simplex[0][k]) / step[k]);
      if (size < 1e-4) break;
      Point centroid(3, 0.0);
      for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t k = 0; k < 3; ++k) centroid[k] += simplex[i][k] / 3.0;
      auto along = [&](double t) {
        Point x(3);
        for (std::size_t k = 0; k < 3; ++k) x[k] = std::clamp(centroid[k] + t * (simplex[3][k] - centroid[k]), lo[k], hi[k]);
        return x;
      };
      const Point xr = along(-1.0);
      const double fr = evaluate(xr, true);
      if (fr < fs[0]) {
        if (!mine()) {
          simplex[3] = xr, fs[3] = fr;
          break;
        }
        const Point xe = along(-2.0);
        const double fe = evaluate(xe, true);
        if (fe < fr) simplex[3] = xe, fs[3] = fe;
        else simplex[3] = xr, fs[3] = fr;
        continue;
      }
      if (fr < fs[2]) {
        simplex[3] = xr, fs[3] = fr;
        continue;
      }
      if (!mine()) break;
      const Point xc = along(fr < fs[3] ? -0.5 : 0.5);
      const double fc = evaluate(xc, true);
      if (fc < std::min(fr, fs[3])) {
        simplex[3] = xc, fs[3] = fc;
        continue;
      }
      for (std::size_t i = 1; i < 4 && mine(); ++i) {
        for (std::size_t k = 0; k < 3; ++k) simplex[i][k] = simplex[0][k] + 0.5 * (simplex[i][k] - simplex[0][k]);
        fs[i] = evaluate(simplex[i], true);
      }
    }
  }
  return r;
}

}  // namespace qgpu::ssb::detail
