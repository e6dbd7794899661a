#include "cli/compare_stats.h"

#include <algorithm>
#include <functional>

namespace syncopate::cli {
namespace {

std::optional<Spread> SpreadOver(const std::vector<RunSummary>& runs,
                                 const std::function<std::optional<double>(const RunSummary&)>& f) {
  std::vector<double> values;
  for (const RunSummary& run : runs) {
    if (std::optional<double> v = f(run)) values.push_back(*v);
  }
  return SpreadOf(std::move(values));
}

}  // namespace

std::optional<Spread> SpreadOf(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return Spread{median, values.front(), values.back()};
}

int Trials::reached() const {
  return static_cast<int>(std::count_if(runs.begin(), runs.end(),
                                        [](const RunSummary& r) { return r.reached_target; }));
}

std::optional<Spread> Trials::time_to_target() const {
  return SpreadOver(runs, [](const RunSummary& r) {
    return r.reached_target ? r.time_to_target_seconds : std::nullopt;
  });
}

std::optional<Spread> Trials::final_accuracy() const {
  return SpreadOver(runs, [](const RunSummary& r) { return r.final_accuracy; });
}

std::optional<Spread> Trials::compute_time_ratio() const {
  return SpreadOver(runs, [](const RunSummary& r) { return std::optional(r.compute_time_ratio); });
}

std::optional<Spread> Trials::overhead_per_step() const {
  return SpreadOver(runs,
                    [](const RunSummary& r) { return std::optional(r.overhead_per_step_seconds); });
}

bool Better(const Trials& a, const Trials& b) {
  if (a.reached() != b.reached()) return a.reached() > b.reached();
  const std::optional<Spread> ta = a.time_to_target(), tb = b.time_to_target();
  if (ta && tb && ta->median != tb->median) return ta->median < tb->median;
  const std::optional<Spread> fa = a.final_accuracy(), fb = b.final_accuracy();
  if (fa && fb) return fa->median > fb->median;
  return fa.has_value() && !fb.has_value();
}

const Trials& Best(const std::vector<Trials>& sweep) {
  const Trials* best = &sweep.front();
  for (const Trials& t : sweep) {
    if (Better(t, *best)) best = &t;
  }
  return *best;
}

std::vector<BandPoint> AccuracyBand(const std::vector<RunSummary>& runs, double step) {
  double end = 0;
  for (const RunSummary& run : runs) {
    if (!run.accuracy.empty()) end = std::max(end, run.accuracy.back().first);
  }
  std::vector<BandPoint> band;
  if (!(step > 0)) return band;
  for (int64_t i = 0;; ++i) {
    const double t = static_cast<double>(i) * step;
    std::vector<double> at_t;
    for (const RunSummary& run : runs) {
      // The last report at or before t.
      auto after = std::upper_bound(
          run.accuracy.begin(), run.accuracy.end(), t,
          [](double x, const std::pair<double, double>& p) { return x < p.first; });
      if (after != run.accuracy.begin()) at_t.push_back(std::prev(after)->second);
    }
    if (std::optional<Spread> s = SpreadOf(std::move(at_t))) {
      band.push_back({t, s->median, s->min, s->max});
    }
    if (t >= end) break;
  }
  return band;
}

}  // namespace syncopate::cli
