#include "sync/flow_simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {
namespace {

// A transfer with less than this fraction of its bytes left counts as finished (rounding).
constexpr double kDoneFraction = 1e-9;

}  // namespace

namespace {

// Progressive filling of the transfers `members` over what `used` leaves of `capacities`: every
// unfrozen transfer runs at the same level; the resource whose fair share of what is left is
// smallest saturates next and freezes the transfers through it. Adds the rates to `used`.
void FillClass(const std::vector<double>& capacities, const std::vector<Transfer>& transfers,
               const std::vector<int>& members, std::vector<double>& used,
               std::vector<double>& rates) {
  // `used`: the rate already given, per resource (higher classes, then this class's frozen ones).
  const size_t resources = capacities.size();
  std::vector<int> unfrozen(resources, 0);  // unfrozen transfers per resource
  std::vector<std::vector<int>> users(resources);
  for (int t : members) {
    for (int r : transfers[t].resources) {
      ++unfrozen[r];
      users[r].push_back(t);
    }
  }
  size_t left = members.size();
  while (left > 0) {
    int bottleneck = -1;
    double level = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < resources; ++r) {
      if (unfrozen[r] == 0) continue;
      const double share = std::max(0.0, capacities[r] - used[r]) / unfrozen[r];
      if (share < level) {
        level = share;
        bottleneck = static_cast<int>(r);
      }
    }
    if (bottleneck < 0) break;  // only transfers through no resource remain
    for (int t : users[bottleneck]) {
      if (rates[t] >= 0) continue;
      rates[t] = level;
      --left;
      for (int r : transfers[t].resources) {
        --unfrozen[r];
        used[r] += level;
      }
    }
  }
}

}  // namespace

std::vector<double> MaxMinRates(const std::vector<double>& capacities,
                                const std::vector<Transfer>& transfers) {
  std::map<int, std::vector<int>> classes;
  for (size_t t = 0; t < transfers.size(); ++t) {
    classes[transfers[t].priority].push_back(static_cast<int>(t));
  }
  std::vector<double> used(capacities.size(), 0.0);
  std::vector<double> rates(transfers.size(), -1.0);  // -1: not frozen yet
  for (const auto& [priority, members] : classes) {
    FillClass(capacities, transfers, members, used, rates);
  }
  // A transfer through no resource is unconstrained.
  for (double& rate : rates) {
    if (rate < 0) rate = std::numeric_limits<double>::infinity();
  }
  return rates;
}

absl::StatusOr<std::vector<double>> SimulateTransfers(const std::vector<double>& capacities,
                                                      const std::vector<Transfer>& transfers) {
  for (double c : capacities) {
    if (!(c > 0) || !std::isfinite(c)) {
      return absl::InvalidArgumentError("capacities must be positive and finite");
    }
  }
  for (const Transfer& t : transfers) {
    if (!(t.bytes >= 0) || !std::isfinite(t.bytes)) {
      return absl::InvalidArgumentError("transfer sizes must be finite and non-negative");
    }
    for (int r : t.resources) {
      if (r < 0 || r >= static_cast<int>(capacities.size())) {
        return absl::InvalidArgumentError(absl::StrCat("unknown resource ", r));
      }
    }
  }
  std::vector<double> finish(transfers.size(), 0.0);
  std::vector<double> remaining(transfers.size());
  std::vector<int> active;
  for (size_t t = 0; t < transfers.size(); ++t) {
    remaining[t] = transfers[t].bytes;
    if (remaining[t] > 0) active.push_back(static_cast<int>(t));
  }
  double now = 0;
  std::vector<Transfer> running;
  while (!active.empty()) {
    running.clear();
    for (int t : active) running.push_back(transfers[t]);
    const std::vector<double> rates = MaxMinRates(capacities, running);
    double step = std::numeric_limits<double>::infinity();
    for (size_t a = 0; a < active.size(); ++a) {
      step = std::min(step, remaining[active[a]] / rates[a]);
    }
    now += step;
    std::vector<int> still;
    for (size_t a = 0; a < active.size(); ++a) {
      const int t = active[a];
      remaining[t] -= rates[a] * step;
      if (remaining[t] <= transfers[t].bytes * kDoneFraction) {
        finish[t] = now;
      } else {
        still.push_back(t);
      }
    }
    active.swap(still);
  }
  return finish;
}

std::vector<Transfer> MulticastTransfers(const MulticastProblem& problem,
                                         const MulticastPlan& plan) {
  const int n = problem.size();
  std::vector<Transfer> transfers;
  for (int i = 0; i < n; ++i) {
    if (problem.layer == MulticastLayer::kL3) {
      Transfer required{problem.volume[i], {i}, 0};
      Transfer added{problem.volume[i], {i}, 1};
      for (int j = 0; j < n; ++j) {
        if (!plan.sends.at(i, j)) continue;
        (plan.additions.at(i, j) ? added : required).resources.push_back(n + j);
      }
      for (Transfer* t : {&required, &added}) {
        if (t->resources.size() > 1) transfers.push_back(std::move(*t));
      }
    } else {
      for (int j = 0; j < n; ++j) {
        if (!plan.sends.at(i, j)) continue;
        transfers.push_back(
            Transfer{problem.volume[i], {i, n + j}, plan.additions.at(i, j) ? 1 : 0});
      }
    }
  }
  return transfers;
}

std::vector<double> MulticastCapacities(const MulticastProblem& problem) {
  std::vector<double> capacities = problem.upload;
  capacities.insert(capacities.end(), problem.download.begin(), problem.download.end());
  return capacities;
}

absl::StatusOr<RoundTimes> SimulateMulticastRound(const MulticastProblem& problem,
                                                  const MulticastPlan& plan) {
  const std::vector<Transfer> transfers = MulticastTransfers(problem, plan);
  absl::StatusOr<std::vector<double>> finish =
      SimulateTransfers(MulticastCapacities(problem), transfers);
  if (!finish.ok()) return finish.status();
  RoundTimes times;
  for (size_t t = 0; t < transfers.size(); ++t) {
    times.all_seconds = std::max(times.all_seconds, (*finish)[t]);
    if (transfers[t].priority == 0) {
      times.required_seconds = std::max(times.required_seconds, (*finish)[t]);
    }
  }
  return times;
}

double CompletionLowerBound(const MulticastProblem& problem) {
  double bound = 0;
  double received = 0;
  double download = 0;
  for (int i = 0; i < problem.size(); ++i) {
    const int p = problem.min_receivers[i];
    const double sent = problem.layer == MulticastLayer::kL3 ? (p > 0 ? problem.volume[i] : 0)
                                                             : p * problem.volume[i];
    bound = std::max(bound, sent / problem.upload[i]);
    received += p * problem.volume[i];
    download += problem.download[i];
  }
  return std::max(bound, received / download);
}

MulticastProblem RandomBandwidthProblem(int trainers, double mean, double spread,
                                        double upload_scale, double volume, int min_receivers,
                                        MulticastLayer layer, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> x(-1.0, 1.0);
  MulticastProblem problem;
  problem.layer = layer;
  for (int i = 0; i < trainers; ++i) {
    problem.download.push_back(mean * (1 + spread * x(rng)));
    problem.upload.push_back(mean * upload_scale * (1 + spread * x(rng)));
    problem.volume.push_back(volume);
    problem.min_receivers.push_back(min_receivers);
  }
  return problem;
}

}  // namespace syncopate::sync
