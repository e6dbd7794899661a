#include "sync/online_multicast_selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {
namespace {

// The decision being built: candidates x, chosen y, the bytes each chosen pair still carries, and
// the running totals per sender and receiver.
class Selection {
 public:
  explicit Selection(const OnlineMulticastProblem& p)
      : p_(p),
        n_(p.size()),
        candidates_(n_),
        chosen_(n_),
        volume_(static_cast<size_t>(n_) * n_, 0.0),
        received_(n_, 0.0) {
    for (int i = 0; i < n_; ++i) {
      for (int j = 0; j < n_; ++j) {
        if (i == j) continue;
        if (i == p.ready) {
          candidates_.set(i, j, true);
          volume_[Index(i, j)] = p.links.volume[i];
        } else if (p.in_flight.at(i, j)) {
          candidates_.set(i, j, true);
          volume_[Index(i, j)] = p.Remaining(i, j);
        }
      }
    }
  }

  const PairMatrix& candidates() const { return candidates_; }
  const PairMatrix& chosen() const { return chosen_; }
  double volume(int i, int j) const { return volume_[Index(i, j)]; }
  double received(int j) const { return received_[j]; }

  void Choose(int i, int j) {
    chosen_.set(i, j, true);
    received_[j] += volume(i, j);
  }

  // Bytes sender i sends for its chosen receivers, plus `extra` more to one more receiver.
  double Sent(int i, double extra = 0) const {
    double bytes = 0;
    for (int j = 0; j < n_; ++j) {
      if (!chosen_.at(i, j)) continue;
      bytes = p_.links.layer == MulticastLayer::kL7 ? bytes + volume(i, j)
                                                    : std::max(bytes, volume(i, j));
    }
    return p_.links.layer == MulticastLayer::kL7 ? bytes + extra : std::max(bytes, extra);
  }

 private:
  size_t Index(int i, int j) const { return static_cast<size_t>(i) * n_ + j; }

  const OnlineMulticastProblem& p_;
  const int n_;
  PairMatrix candidates_;
  PairMatrix chosen_;
  std::vector<double> volume_;
  std::vector<double> received_;
};

}  // namespace

absl::Status OnlineMulticastProblem::Validate() const {
  if (absl::Status s = links.Validate(); !s.ok()) return s;
  const int n = size();
  if (ready < 0 || ready >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("ready trainer ", ready, " is not in [0, ", n, ")"));
  }
  if (!(eta > 0 && eta <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("eta = ", eta, " is outside (0, 1]"));
  }
  if (in_flight.size() != n || pinned.size() != n ||
      remaining.size() != static_cast<size_t>(n) * n || tau.size() != static_cast<size_t>(n)) {
    return absl::InvalidArgumentError("in_flight, pinned, remaining and tau differ in size");
  }
  for (double value : remaining) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError("remaining volumes must be finite and non-negative");
    }
  }
  for (double value : tau) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError("tau must be finite and non-negative");
    }
  }
  return absl::OkStatus();
}

OnlineMulticastPlan SelectSelMcastOnline(const OnlineMulticastProblem& p,
                                         const PairHistory& history, int64_t round) {
  const int n = p.size();
  const int kappa = p.ready;
  Selection s(p);
  const PairMatrix& x = s.candidates();

  // Tasks: kappa and every trainer with a multicast in flight.
  std::vector<int> tasks;
  for (int i = 0; i < n; ++i) {
    if (i == kappa || p.in_flight.RowCount(i) > 0) tasks.push_back(i);
  }

  // Kept: kappa's forced pairs; in-flight pairs that were forced or are nearly delivered.
  for (int i : tasks) {
    for (int j = 0; j < n; ++j) {
      if (!x.at(i, j)) continue;
      const bool keep = i == kappa
                            ? history.Forced(i, j, round)
                            : p.pinned.at(i, j) || s.volume(i, j) < p.eta * p.links.volume[i];
      if (keep) s.Choose(i, j);
    }
  }

  // Basic selection: the task that would block soonest first, lightest receivers each.
  std::stable_sort(tasks.begin(), tasks.end(), [&](int a, int b) { return p.tau[a] < p.tau[b]; });
  std::vector<int> open;
  for (int i : tasks) {
    const int missing = p.links.min_receivers[i] - s.chosen().RowCount(i);
    if (missing <= 0) continue;
    open.clear();
    for (int j = 0; j < n; ++j) {
      if (x.at(i, j) && !s.chosen().at(i, j)) open.push_back(j);
    }
    auto load = [&](int j) { return (s.volume(i, j) + s.received(j)) / p.links.download[j]; };
    std::stable_sort(open.begin(), open.end(), [&](int a, int b) { return load(a) < load(b); });
    for (int c = 0; c < missing && c < static_cast<int>(open.size()); ++c) s.Choose(i, open[c]);
  }

  // Each task's deadline: when it would stop blocking anyway, or when its chosen transfers end.
  OnlineMulticastPlan plan{PairMatrix(n), PairMatrix(n), std::vector<double>(n, 0.0),
                           PairMatrix(n)};
  std::vector<double>& t = plan.deadline_seconds;
  for (int i : tasks) {
    t[i] = std::max(p.tau[i], s.Sent(i) / p.links.upload[i]);
    for (int j = 0; j < n; ++j) {
      if (s.chosen().at(i, j) && s.volume(i, j) > 0) {
        t[i] = std::max(t[i], s.received(j) / p.links.download[j]);
      }
    }
  }

  // Pareto additions among the remaining candidates, longest unsynchronized first, each within
  // its own deadline and within the deadline of every task still sending to that receiver (less
  // the margin).
  std::vector<std::tuple<int64_t, int, int>> unchosen;  // (-c_ij, i, j)
  for (int i : tasks) {
    for (int j = 0; j < n; ++j) {
      if (x.at(i, j) && !s.chosen().at(i, j)) {
        unchosen.emplace_back(-history.RoundsSince(i, j, round), i, j);
      }
    }
  }
  std::sort(unchosen.begin(), unchosen.end());
  const double margin = ParetoMargin(p.pareto_margin);
  for (const auto& [negative_c, i, j] : unchosen) {
    double limit = t[i];
    for (int l : tasks) {
      if (s.chosen().at(l, j) && s.volume(l, j) > 0) limit = std::min(limit, t[l]);
    }
    limit *= (1 - margin) * (1 + kLimitSlack);
    if (s.Sent(i, s.volume(i, j)) / p.links.upload[i] <= limit &&
        (s.received(j) + s.volume(i, j)) / p.links.download[j] <= limit) {
      s.Choose(i, j);
      plan.additions.set(i, j, true);
    }
  }

  plan.sends = s.chosen();
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != kappa && p.in_flight.at(i, j) && !plan.sends.at(i, j))
        plan.preempted.set(i, j, true);
    }
  }
  return plan;
}

OnlineMulticastPlan SelectOrpheusOnline(const OnlineMulticastProblem& p, const PairHistory& history,
                                        int64_t round, std::mt19937_64& rng) {
  const int n = p.size();
  const int kappa = p.ready;
  OnlineMulticastPlan plan{PairMatrix(n), PairMatrix(n), std::vector<double>(n, 0.0),
                           PairMatrix(n)};
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != kappa && i != j && p.in_flight.at(i, j)) plan.sends.set(i, j, true);
    }
  }
  std::vector<int> rest;
  for (int j = 0; j < n; ++j) {
    if (j == kappa) continue;
    if (history.Forced(kappa, j, round)) {
      plan.sends.set(kappa, j, true);
    } else {
      rest.push_back(j);
    }
  }
  const int drawn =
      DrawUniformly(rest, p.links.min_receivers[kappa] - plan.sends.RowCount(kappa), rng);
  for (int c = 0; c < drawn; ++c) plan.sends.set(kappa, rest[c], true);
  return plan;
}

}  // namespace syncopate::sync
