#include "sync/bandwidth_estimator.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

double BandwidthEstimator::ProvenRate(const std::vector<StreamSample>& streams) {
  struct Span {
    double start, end, bytes;
  };
  std::vector<Span> spans;  // in order of their ends
  for (const StreamSample& s : streams) {
    if (s.bytes > 0 && std::isfinite(s.bytes) && s.seconds > 0 && std::isfinite(s.seconds) &&
        std::isfinite(s.start_seconds)) {
      spans.push_back({s.start_seconds, s.start_seconds + s.seconds, s.bytes});
    }
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.end < b.end; });
  double best = 0;
  for (const Span& first : spans) {  // windows opening at `first`'s start
    double bytes = 0;
    for (const Span& s : spans) {  // closing at each end in turn
      if (s.start < first.start) continue;
      bytes += s.bytes;
      if (bytes >= kMinSampleBytes) best = std::max(best, bytes / (s.end - first.start));
    }
  }
  return best;
}

absl::Status BandwidthEstimator::AddUpload(TrainerId trainer, double bytes, double seconds) {
  return Add(trainer, bytes, seconds, &Samples::upload);
}

absl::Status BandwidthEstimator::AddDownload(TrainerId trainer, double bytes, double seconds) {
  return Add(trainer, bytes, seconds, &Samples::download);
}

void BandwidthEstimator::Observe(TrainerId trainer, const TransferSample& sample) {
  auto observe = [&](double bytes, double seconds, const std::vector<StreamSample>& streams,
                     std::deque<double> Samples::*direction) {
    if (!streams.empty()) {
      if (const double rate = ProvenRate(streams); rate > 0) AddRate(trainer, rate, direction);
      return;
    }
    if (bytes > 0) Add(trainer, bytes, seconds, direction).IgnoreError();
  };
  observe(sample.sent_bytes, sample.send_seconds, sample.sent_streams, &Samples::upload);
  observe(sample.received_bytes, sample.receive_seconds, sample.received_streams,
          &Samples::download);
  for (const StreamSample& s : sample.sent_streams) AddPairSample(trainer, s.peer, s);
  for (const StreamSample& s : sample.received_streams) AddPairSample(s.peer, trainer, s);
}

void BandwidthEstimator::AddPairSample(TrainerId sender, TrainerId receiver,
                                       const StreamSample& stream) {
  if (sender == receiver || !(stream.bytes >= kMinSampleBytes) || !std::isfinite(stream.bytes) ||
      !(stream.seconds > 0) || !std::isfinite(stream.seconds)) {
    return;
  }
  auto it = pairs_.find({sender, receiver});
  if (it == pairs_.end()) {
    if (pairs_.size() >= kMaxPairs) return;
    it = pairs_.try_emplace({sender, receiver}).first;
  }
  it->second.push_back(stream.bytes / stream.seconds);
  if (it->second.size() > static_cast<size_t>(kWindow)) it->second.pop_front();
}

std::vector<std::pair<TrainerId, double>> BandwidthEstimator::SendsOf(TrainerId sender) const {
  std::vector<std::pair<TrainerId, double>> sends;
  for (auto it = pairs_.lower_bound({sender, 0}); it != pairs_.end() && it->first.first == sender;
       ++it) {
    if (it->second.empty()) continue;
    sends.emplace_back(it->first.second, *std::max_element(it->second.begin(), it->second.end()));
  }
  return sends;
}

void BandwidthEstimator::Forget(TrainerId trainer) {
  rates_.erase(trainer);
  means_.reset();
  for (auto it = pairs_.begin(); it != pairs_.end();) {  // at most kMaxPairs; leaves are rare
    it = it->first.first == trainer || it->first.second == trainer ? pairs_.erase(it)
                                                                   : std::next(it);
  }
}

absl::Status BandwidthEstimator::Add(TrainerId trainer, double bytes, double seconds,
                                     std::deque<double> Samples::*direction) {
  if (!std::isfinite(bytes) || !std::isfinite(seconds) || bytes <= 0 || seconds <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a transfer sample needs positive bytes and seconds, got ", bytes, " in ", seconds, " s"));
  }
  if (bytes < kMinSampleBytes) return absl::OkStatus();
  AddRate(trainer, bytes / seconds, direction);
  return absl::OkStatus();
}

void BandwidthEstimator::AddRate(TrainerId trainer, double rate,
                                 std::deque<double> Samples::*direction) {
  std::deque<double>& samples = rates_[trainer].*direction;
  samples.push_back(rate);
  if (samples.size() > static_cast<size_t>(kWindow)) samples.pop_front();
  means_.reset();
}

std::optional<double> BandwidthEstimator::Achieved(const std::deque<double>& samples) {
  if (samples.empty()) return std::nullopt;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  return sorted.size() >= 3 ? sorted[1] : sorted[0];
}

double BandwidthEstimator::MeanOf(std::deque<double> Samples::*direction, double fallback) const {
  double sum = 0;
  int count = 0;
  for (const auto& [id, samples] : rates_) {
    if (std::optional<double> rate = Achieved(samples.*direction)) {
      sum += *rate;
      ++count;
    }
  }
  return count > 0 ? sum / count : fallback;
}

LinkRates BandwidthEstimator::Estimate(TrainerId trainer) const {
  std::optional<double> upload;
  std::optional<double> download;
  if (auto it = rates_.find(trainer); it != rates_.end()) {
    upload = Achieved(it->second.upload);
    download = Achieved(it->second.download);
  }
  if (upload && download) return {*upload, *download};
  if (!means_) {
    means_ = LinkRates{MeanOf(&Samples::upload, initial_.upload),
                       MeanOf(&Samples::download, initial_.download)};
  }
  return {upload.value_or(means_->upload), download.value_or(means_->download)};
}

bool BandwidthEstimator::Measured(TrainerId trainer) const {
  auto it = rates_.find(trainer);
  return it != rates_.end() && !it->second.upload.empty() && !it->second.download.empty();
}

}  // namespace syncopate::sync
