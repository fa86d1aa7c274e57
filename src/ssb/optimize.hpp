#pragma once
// Internal: derivative-free box-constrained minimisation used by the aberration fit: a seeded
// Tree-structured Parzen Estimator (TPE) global search followed by Nelder-Mead refinement from its best point.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace qgpu::ssb::detail {

struct TpeOptions {
  std::size_t trials = 200;       // evaluations in all (Nelder-Mead may stop early once its simplex collapses)
  std::size_t tpe_trials = 150;   // of which TPE (the first n_startup of them uniform random)
  std::size_t n_startup = 0;      // 0: max(2 d + 4, tpe_trials / 5), at most tpe_trials
  double gamma = 0.25;            // good / bad split quantile
  std::size_t candidates = 24;    // draws from l(x) per TPE step
  std::uint64_t seed = 1;
};

struct Evaluation {
  std::vector<double> x;
  double loss = 0;
  bool nelder_mead = false;
};

struct OptimizeResult {
  std::vector<double> best_x;
  double best_loss = 0;
  std::vector<Evaluation> history;  // every evaluation, in order
};

// Minimises f over the box [lo, hi] (lo < hi per dimension). Deterministic for a seed.
OptimizeResult minimize_tpe_nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                        const std::vector<double>& lo, const std::vector<double>& hi,
                                        const TpeOptions& o);

}  // namespace qgpu::ssb::detail
