#include "sync/bandwidth_estimator.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

absl::Status BandwidthEstimator::AddUpload(TrainerId trainer, double bytes, double seconds) {
  return Add(trainer, bytes, seconds, &Smoothed::upload);
}

void BandwidthEstimator::Observe(TrainerId trainer, const TransferSample& sample) {
  if (sample.sent_bytes > 0)
    AddUpload(trainer, sample.sent_bytes, sample.send_seconds).IgnoreError();
  if (sample.received_bytes > 0) {
    AddDownload(trainer, sample.received_bytes, sample.receive_seconds).IgnoreError();
  }
}

absl::Status BandwidthEstimator::AddDownload(TrainerId trainer, double bytes, double seconds) {
  return Add(trainer, bytes, seconds, &Smoothed::download);
}

absl::Status BandwidthEstimator::Add(TrainerId trainer, double bytes, double seconds,
                                     std::optional<double> Smoothed::*direction) {
  if (!std::isfinite(bytes) || !std::isfinite(seconds) || bytes <= 0 || seconds <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a transfer sample needs positive bytes and seconds, got ", bytes, " in ", seconds, " s"));
  }
  if (bytes < kMinSampleBytes) return absl::OkStatus();
  const double rate = bytes / seconds;
  std::optional<double>& smoothed = rates_[trainer].*direction;
  smoothed = smoothed ? (1 - weight_) * *smoothed + weight_ * rate : rate;
  means_.reset();
  return absl::OkStatus();
}

double BandwidthEstimator::MeanOf(std::optional<double> Smoothed::*direction,
                                  double fallback) const {
  double sum = 0;
  int count = 0;
  for (const auto& [id, smoothed] : rates_) {
    if (const std::optional<double>& rate = smoothed.*direction) {
      sum += *rate;
      ++count;
    }
  }
  return count > 0 ? sum / count : fallback;
}

LinkRates BandwidthEstimator::Estimate(TrainerId trainer) const {
  Smoothed smoothed;
  if (auto it = rates_.find(trainer); it != rates_.end()) smoothed = it->second;
  if (smoothed.upload && smoothed.download) return {*smoothed.upload, *smoothed.download};
  if (!means_) {
    means_ = LinkRates{MeanOf(&Smoothed::upload, initial_.upload),
                       MeanOf(&Smoothed::download, initial_.download)};
  }
  return {smoothed.upload.value_or(means_->upload), smoothed.download.value_or(means_->download)};
}

bool BandwidthEstimator::Measured(TrainerId trainer) const {
  auto it = rates_.find(trainer);
  return it != rates_.end() && it->second.upload && it->second.download;
}

}  // namespace syncopate::sync
