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

// The astigmatism fit's search over x = (C1, A1 cos 2a, A1 sin 2a) in the box [lo, hi] (issue 31: TPE in 3D found
// losses 1.2-10x worse than the optimum): (1) C1 alone on a grid over [lo0, hi0] (A1 = 0); (2) at the best C1, A1 on a
// polar grid (12 angles x magnitudes 4..64 % of the A1 range); (3) Nelder-Mead in 3D from the 3 best distinct points
// of (1) and (2), the remaining budget split between them. At most `trials` evaluations. Deterministic.
OptimizeResult minimize_staged_astigmatism(const std::function<double(const std::vector<double>&)>& f,
                                           const std::vector<double>& lo, const std::vector<double>& hi,
                                           std::size_t trials);

}  // namespace qgpu::ssb::detail
