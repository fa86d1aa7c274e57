// The TPE + Nelder-Mead optimiser on analytic functions, and the SSB defocus fit on simulated data (CPU).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "ssb/optimize.hpp"
#include "ssb/ssb.hpp"
#include "ssb_fixtures.hpp"

namespace qgpu::ssb {
namespace {

using detail::minimize_tpe_nelder_mead;
using detail::TpeOptions;

TEST(SsbOptimize, FindsTheGlobalMinimumOfAMultimodalFunction) {
  // Narrow global well at x = 3.3 among shallower ripples on [-10, 10].
  auto f = [](const std::vector<double>& x) {
    const double d = x[0] - 3.3;
    return -2.0 * std::exp(-d * d / 0.5) + 0.3 * std::cos(3 * x[0]) + 0.01 * x[0] * x[0];
  };
  TpeOptions o;
  o.trials = 80;
  o.tpe_trials = 60;
  const auto r = minimize_tpe_nelder_mead(f, {-10}, {10}, o);
  EXPECT_NEAR(r.best_x[0], 3.3, 0.1);
  EXPECT_LE(r.history.size(), 80u);
  for (const auto& e : r.history) EXPECT_GE(e.loss, r.best_loss);
}

TEST(SsbOptimize, NelderMeadRefinesATwoDimensionalValley) {
  auto f = [](const std::vector<double>& x) {
    return (x[0] - 1.5) * (x[0] - 1.5) + 10 * (x[1] + 0.7) * (x[1] + 0.7) + 0.5 * (x[0] - 1.5) * (x[1] + 0.7);
  };
  TpeOptions o;
  o.trials = 150;
  o.tpe_trials = 50;
  const auto r = minimize_tpe_nelder_mead(f, {-5, -5}, {5, 5}, o);
  EXPECT_NEAR(r.best_x[0], 1.5, 1e-3);
  EXPECT_NEAR(r.best_x[1], -0.7, 1e-3);
  std::size_t nm = 0;
  for (const auto& e : r.history) nm += e.nelder_mead;
  EXPECT_GT(nm, 0u);
}

TEST(SsbOptimize, DeterministicForASeed) {
  auto f = [](const std::vector<double>& x) { return std::sin(x[0]) + 0.1 * x[0]; };
  TpeOptions o;
  o.trials = 30;
  o.tpe_trials = 25;
  const auto a = minimize_tpe_nelder_mead(f, {-6}, {6}, o), b = minimize_tpe_nelder_mead(f, {-6}, {6}, o);
  ASSERT_EQ(a.history.size(), b.history.size());
  for (std::size_t i = 0; i < a.history.size(); ++i) EXPECT_EQ(a.history[i].x, b.history[i].x);
  o.seed = 2;
  const auto c = minimize_tpe_nelder_mead(f, {-6}, {6}, o);
  EXPECT_NE(a.history[0].x, c.history[0].x);
  EXPECT_THROW(minimize_tpe_nelder_mead(f, {1}, {1}, o), InvalidArgument);
}

// True C1 = 150 A, search [-400, 400]: 40 trials (30 TPE + 10 Nelder-Mead) on the 2x2-binned detector.
// The loss has one sharp well (measured: -0.32 at 150 A, -0.15 at 100 / 200 A, ~ -0.01 beyond +-150 A of it).
// Measured: C1 = 150.8 A in 0.3 s.
TEST(SsbFit, RecoversTheDefocus) {
  const Dataset& ds = testing::dataset(150);
  SsbParams p = testing::true_params(150);
  p.aberrations.C1 = 0;  // the fit must not use the nominal value
  FitOptions o;
  o.trials = 40;
  o.c1_min = -400;
  o.c1_max = 400;
  o.detector_bin = 2;
  const FitResult f = fit(ds, p, o);
  EXPECT_NEAR(f.aberrations.C1, 150.0, 15.0);
  EXPECT_EQ(f.aberrations.A1, 0.0);  // not fitted: kept from p
  ASSERT_EQ(f.loss_trace.size(), f.trial_params.size());
  EXPECT_LE(f.loss_trace.size(), 40u);
  EXPECT_GE(f.loss_trace.size(), 30u);
  double best = f.loss_trace[0];
  for (double l : f.loss_trace) best = std::min(best, l);
  EXPECT_EQ(f.loss, best);
  for (const Aberrations& a : f.trial_params) {
    EXPECT_GE(a.C1, -400.0);
    EXPECT_LE(a.C1, 400.0);
  }
  EXPECT_EQ(f.provenance.operation, "ssb.fit");
  EXPECT_EQ(f.provenance.parameters.at("search").at("tpe_trials").get<std::size_t>(), 30u);
  EXPECT_EQ(f.provenance.parameters.at("best").at("C1").get<double>(), f.aberrations.C1);

  // Reconstructing with the fitted defocus recovers the object.
  SsbParams fitted = p;
  fitted.aberrations = f.aberrations;
  EXPECT_GE(testing::pearson(reconstruct(ds, fitted).phase.data, testing::truth(150)), 0.9);

  // Same seed, same trials.
  const FitResult again = fit(ds, p, o);
  EXPECT_EQ(again.loss_trace, f.loss_trace);
}

// With astigmatism free too: the simulator has none, so the fit must find C1 and a small A1 (measured: C1 = 148.8 A,
// A1 = 3.1 A in 90 trials).
TEST(SsbFit, AstigmatismFreeFitKeepsTheDefocus) {
  const Dataset& ds = testing::dataset(150);
  SsbParams p = testing::true_params(150);
  FitOptions o;
  o.trials = 90;
  o.c1_min = -400;
  o.c1_max = 400;
  o.detector_bin = 2;
  o.fit_astigmatism = true;
  const FitResult f = fit(ds, p, o);
  EXPECT_NEAR(f.aberrations.C1, 150.0, 15.0);
  EXPECT_LT(f.aberrations.A1, 15.0);
}

}  // namespace
}  // namespace qgpu::ssb
