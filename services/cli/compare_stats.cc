#include "cli/compare_stats.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

std::string Verdict(const std::vector<NamedTrials>& modes, double target_accuracy) {
  const std::string target = absl::StrFormat("%g", target_accuracy);
  const NamedTrials* fastest = nullptr;
  const NamedTrials* most_accurate = nullptr;
  bool ran = false;
  for (const NamedTrials& m : modes) {
    if (m.trials == nullptr || m.trials->runs.empty()) continue;
    ran = true;
    if (m.trials->mostly_reached() &&
        (fastest == nullptr ||
         m.trials->time_to_target()->median < fastest->trials->time_to_target()->median)) {
      fastest = &m;
    }
    const std::optional<Spread> accuracy = m.trials->final_accuracy();
    if (accuracy && (most_accurate == nullptr ||
                     accuracy->median > most_accurate->trials->final_accuracy()->median)) {
      most_accurate = &m;
    }
  }
  if (!ran) return "no mode ran to the end";
  if (fastest == nullptr) {
    std::string out = absl::StrCat("no mode reached ", target, " in most of its runs here");
    if (most_accurate != nullptr) {
      absl::StrAppendFormat(&out, "; the best final accuracy: %s (%.4f)", most_accurate->mode,
                            most_accurate->trials->final_accuracy()->median);
    }
    return out;
  }
  const double time = fastest->trials->time_to_target()->median;
  std::string out = absl::StrFormat("fastest to %s here: %s (%.1f s)", target, fastest->mode, time);
  for (const char* reference : {"bsp", "asp"}) {
    for (const NamedTrials& m : modes) {
      if (m.mode != reference || &m == fastest || m.trials == nullptr || m.trials->runs.empty()) {
        continue;
      }
      if (m.trials->mostly_reached()) {
        absl::StrAppendFormat(&out, ", %.2fx %s", time / m.trials->time_to_target()->median,
                              reference);
      } else {
        absl::StrAppend(&out, ", ", reference, " did not reach ", target);
      }
    }
  }
  return out;
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
