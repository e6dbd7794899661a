#include "sync/multicast_selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {
namespace {

// Normalized loads within this fraction of each other count as near-equal in the basic selection.
constexpr double kNearEqualLoad = 0.1;

// Running per-trainer byte totals of a plan being built.
struct Loads {
  std::vector<double> sent;      // bytes each sender sends
  std::vector<double> received;  // bytes each receiver receives
};

double SendIncrement(const MulticastProblem& p, const PairMatrix& sends, int i) {
  if (p.layer == MulticastLayer::kL7) return p.volume[i];
  return sends.RowCount(i) == 0 ? p.volume[i] : 0.0;
}

void Add(const MulticastProblem& p, int i, int j, PairMatrix& sends, Loads& loads) {
  loads.sent[i] += SendIncrement(p, sends, i);
  loads.received[j] += p.volume[i];
  sends.set(i, j, true);
}

Loads Empty(int n) { return {std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)}; }

// Forces the pairs the k-round rule requires; returns the loads they create.
Loads ForcePairs(const MulticastProblem& p, const PairHistory& history, int64_t round,
                 PairMatrix& sends) {
  const int n = p.size();
  Loads loads = Empty(n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && history.Forced(i, j, round)) Add(p, i, j, sends, loads);
    }
  }
  return loads;
}

}  // namespace

int PairMatrix::RowCount(int i) const {
  int count = 0;
  for (int j = 0; j < n_; ++j) count += cells_[Index(i, j)];
  return count;
}

int PairMatrix::ColumnCount(int j) const {
  int count = 0;
  for (int i = 0; i < n_; ++i) count += cells_[Index(i, j)];
  return count;
}

PairHistory::PairHistory(int n, int k) : n_(n), k_(k), last_(static_cast<size_t>(n) * n, -1) {}

int64_t PairHistory::RoundsSince(int i, int j, int64_t round) const {
  return round - last_[static_cast<size_t>(i) * n_ + j];
}

void PairHistory::Record(const PairMatrix& sends, int64_t round) {
  for (int i = 0; i < n_; ++i) {
    for (int j = 0; j < n_; ++j) {
      if (sends.at(i, j)) last_[static_cast<size_t>(i) * n_ + j] = round;
    }
  }
}

absl::Status MulticastProblem::Validate() const {
  const size_t n = upload.size();
  if (download.size() != n || volume.size() != n || min_receivers.size() != n) {
    return absl::InvalidArgumentError("upload, download, volume and min_receivers differ in size");
  }
  for (size_t i = 0; i < n; ++i) {
    for (double value : {upload[i], download[i], volume[i]}) {
      if (!std::isfinite(value) || value <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("trainer ", i, ": rates and volumes must be positive and finite"));
      }
    }
    if (min_receivers[i] < 0 || min_receivers[i] > static_cast<int>(n) - 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("trainer ", i, ": p = ", min_receivers[i], " is outside [0, ", n - 1, "]"));
    }
  }
  return absl::OkStatus();
}

double SendBytes(const MulticastProblem& problem, const PairMatrix& sends, int i) {
  const int receivers = sends.RowCount(i);
  if (problem.layer == MulticastLayer::kL7) return receivers * problem.volume[i];
  return receivers > 0 ? problem.volume[i] : 0.0;
}

double ReceiveBytes(const MulticastProblem& problem, const PairMatrix& sends, int j) {
  double bytes = 0;
  for (int i = 0; i < sends.size(); ++i) {
    if (sends.at(i, j)) bytes += problem.volume[i];
  }
  return bytes;
}

double EstimateSeconds(const MulticastProblem& problem, const PairMatrix& sends) {
  double seconds = 0;
  for (int i = 0; i < problem.size(); ++i) {
    seconds = std::max({seconds, SendBytes(problem, sends, i) / problem.upload[i],
                        ReceiveBytes(problem, sends, i) / problem.download[i]});
  }
  return seconds;
}

MulticastPlan SelectSelMcast(const MulticastProblem& p, const PairHistory& history, int64_t round,
                             bool pareto_additions, double pareto_margin) {
  const int n = p.size();
  MulticastPlan plan{PairMatrix(n), PairMatrix(n), 0};
  PairMatrix& x = plan.sends;
  Loads loads = ForcePairs(p, history, round, x);

  // Basic selection: senders with the most forced receivers first, lightest receivers each.
  std::vector<int> senders(n);
  std::iota(senders.begin(), senders.end(), 0);
  std::stable_sort(senders.begin(), senders.end(),
                   [&](int a, int b) { return x.RowCount(a) > x.RowCount(b); });
  std::vector<int> candidates;
  for (int i : senders) {
    const int missing = p.min_receivers[i] - x.RowCount(i);
    if (missing <= 0) continue;
    candidates.clear();
    for (int j = 0; j < n; ++j) {
      if (j != i && !x.at(i, j)) candidates.push_back(j);
    }
    auto load = [&](int j) { return (p.volume[i] + loads.received[j]) / p.download[j]; };
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](int a, int b) { return load(a) < load(b); });
    const int take = std::min<int>(missing, candidates.size());
    if (take == 0) continue;
    // Receivers clearly lighter than the take-th lightest are taken; among those near it (within
    // kNearEqualLoad either way) the pairs synchronized longest ago go first: with static
    // bandwidths, ties broken by index would pick the same receivers every round, and the k-round
    // rule would then force every other pair at once.
    const double heaviest = load(candidates[take - 1]);
    const auto near = std::partition_point(candidates.begin(), candidates.end(), [&](int j) {
      return load(j) < heaviest / (1 + kNearEqualLoad);
    });
    const auto beyond = std::partition_point(
        near, candidates.end(), [&](int j) { return load(j) <= heaviest * (1 + kNearEqualLoad); });
    std::stable_sort(near, beyond, [&](int a, int b) {
      return history.RoundsSince(i, a, round) > history.RoundsSince(i, b, round);
    });
    for (int c = 0; c < take; ++c) Add(p, i, candidates[c], x, loads);
  }

  // Pareto improvement: add pairs, longest unsynchronized first, that stay within the estimate
  // (less the margin).
  const double t = EstimateSeconds(p, x);
  if (!pareto_additions) {
    plan.estimated_seconds = t;
    return plan;
  }
  std::vector<std::tuple<int64_t, int, int>> unselected;  // (-c_ij, i, j)
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && !x.at(i, j)) unselected.emplace_back(-history.RoundsSince(i, j, round), i, j);
    }
  }
  std::sort(unselected.begin(), unselected.end());
  const double limit = t * (1 - ParetoMargin(pareto_margin)) * (1 + kLimitSlack);
  for (const auto& [negative_c, i, j] : unselected) {
    // An addition that costs its sender nothing (L3, already sending) needs no room there.
    const double increment = SendIncrement(p, x, i);
    const bool sender_fits = increment == 0 || (loads.sent[i] + increment) / p.upload[i] <= limit;
    const double received = loads.received[j] + p.volume[i];
    if (sender_fits && received / p.download[j] <= limit) {
      Add(p, i, j, x, loads);
      plan.additions.set(i, j, true);
    }
  }
  plan.estimated_seconds = EstimateSeconds(p, x);
  return plan;
}

MulticastPlan SelectOrpheus(const MulticastProblem& p, const PairHistory& history, int64_t round,
                            std::mt19937_64& rng) {
  const int n = p.size();
  MulticastPlan plan{PairMatrix(n), PairMatrix(n), 0};
  PairMatrix& x = plan.sends;
  Loads loads = ForcePairs(p, history, round, x);
  std::vector<int> candidates;
  for (int i = 0; i < n; ++i) {
    candidates.clear();
    for (int j = 0; j < n; ++j) {
      if (j != i && !x.at(i, j)) candidates.push_back(j);
    }
    const int drawn = DrawUniformly(candidates, p.min_receivers[i] - x.RowCount(i), rng);
    for (int c = 0; c < drawn; ++c) Add(p, i, candidates[c], x, loads);
  }
  plan.estimated_seconds = EstimateSeconds(p, x);
  return plan;
}

int DrawUniformly(std::vector<int>& candidates, int count, std::mt19937_64& rng) {
  const int drawn = std::clamp(count, 0, static_cast<int>(candidates.size()));
  for (int c = 0; c < drawn; ++c) {
    std::uniform_int_distribution<size_t> pick(c, candidates.size() - 1);
    std::swap(candidates[c], candidates[pick(rng)]);
  }
  return drawn;
}

int DefaultMinReceivers(int n, double fraction) {
  if (n < 2) return 0;
  return std::clamp(static_cast<int>(std::ceil(fraction * n)), 1, n - 1);
}

double ParetoMargin(double margin) { return margin > 0 ? std::min(margin, 1.0) : 0; }

}  // namespace syncopate::sync
