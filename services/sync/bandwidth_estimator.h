// Smoothed per-trainer link rates from measured transfers, for the peer-to-peer modes' planning.
// Trainers time their real transfers and report, per round, the bytes they sent and received and
// how long each direction was busy; the estimate is an exponentially weighted moving average of
// the achieved rates. Pure: no clocks.
#ifndef SYNCOPATE_SYNC_BANDWIDTH_ESTIMATOR_H_
#define SYNCOPATE_SYNC_BANDWIDTH_ESTIMATOR_H_

#include <map>
#include <optional>

#include "absl/status/status.h"
#include "sync/clock_table.h"

namespace syncopate::sync {

struct LinkRates {
  double upload = 0;    // bytes/s the trainer sent at (its egress)
  double download = 0;  // bytes/s it received at (its ingress)
};

// One trainer's measured transfers since its last report (P2P modes): bytes sent and received and
// how long each direction was busy.
struct TransferSample {
  double sent_bytes = 0;
  double send_seconds = 0;
  double received_bytes = 0;
  double receive_seconds = 0;
  int models_sent = 0;  // completed model transfers among the bytes sent
};

class BandwidthEstimator {
 public:
  // The peer-to-peer policies' weight of a new sample, and what they assume before any sample.
  static constexpr double kPolicySampleWeight = 0.3;
  static constexpr LinkRates kPolicyInitial = {1, 1};

  // `weight` of a new sample in (0, 1]; `initial` is assumed for trainers with no sample yet.
  BandwidthEstimator(double weight = kPolicySampleWeight, LinkRates initial = kPolicyInitial)
      : weight_(weight), initial_(initial) {}

  // One direction's transfer: `bytes` moved in `seconds` of busy time. INVALID_ARGUMENT (nothing
  // changes) unless both are positive and finite. Samples below kMinSampleBytes are ignored (OK):
  // their time is mostly latency, not bandwidth.
  absl::Status AddUpload(TrainerId trainer, double bytes, double seconds);
  absl::Status AddDownload(TrainerId trainer, double bytes, double seconds);
  // Both directions of a report; a direction without bytes carries no rate and a bad one is
  // dropped (a report never fails on its measurements).
  void Observe(TrainerId trainer, const TransferSample& sample);

  // The estimate; for a direction without samples, the mean of the other trainers' estimates in
  // that direction, or `initial` when there are none.
  LinkRates Estimate(TrainerId trainer) const;
  // Whether the trainer has samples in both directions.
  bool Measured(TrainerId trainer) const;
  // The estimate once the trainer is Measured; nullopt before.
  std::optional<LinkRates> MeasuredEstimate(TrainerId trainer) const {
    if (!Measured(trainer)) return std::nullopt;
    return Estimate(trainer);
  }
  void Forget(TrainerId trainer) {
    rates_.erase(trainer);
    means_.reset();
  }

  static constexpr double kMinSampleBytes = 64 * 1024;

 private:
  struct Smoothed {
    std::optional<double> upload;
    std::optional<double> download;
  };
  absl::Status Add(TrainerId trainer, double bytes, double seconds,
                   std::optional<double> Smoothed::*direction);
  double MeanOf(std::optional<double> Smoothed::*direction, double fallback) const;

  const double weight_;
  const LinkRates initial_;
  std::map<TrainerId, Smoothed> rates_;
  // Both directions' means, computed when first needed after a change (a round's plan asks for
  // every unmeasured trainer's estimate: O(n) once, not per trainer).
  mutable std::optional<LinkRates> means_;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_BANDWIDTH_ESTIMATOR_H_
