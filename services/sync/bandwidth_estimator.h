// Per-trainer link rates from measured transfers, for the peer-to-peer modes' planning. Trainers
// time their real transfers and report, per exchange, each model stream they sent and received
// (its peer, bytes, start and duration). A direction's sample is the most bytes per second its
// streams prove the link carried (ProvenRate): a slow peer's long stream does not stretch the
// window the fast streams are measured over, so one slow sender does not cap its receiver's
// download estimate, nor one slow receiver its sender's upload. Every sample is a lower bound of
// what the link can do; the estimate is what the link recently achieved: the second largest of its
// last kWindow samples (the largest while it has fewer than three), so a round in which a trainer
// met only slow peers does not pull it down, one outlier does not lift it, and a link that slows
// down is followed within kWindow reports.
//
// It also keeps each ordered pair's rate, for operators to see which path is slow (the planners
// plan with the per-trainer rates, as the papers' switch model does). A sample is one stream's
// bytes over its own span, from either end's report. A stream that shared a link, or a
// low-priority one that yielded to required transfers, moved slower than the path can, so every
// sample is a lower bound: a pair's estimate is the largest of its last kWindow samples, and no
// other sender caps it. Pure: no clocks.
#ifndef SYNCOPATE_SYNC_BANDWIDTH_ESTIMATOR_H_
#define SYNCOPATE_SYNC_BANDWIDTH_ESTIMATOR_H_

#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "sync/clock_table.h"

namespace syncopate::sync {

struct LinkRates {
  double upload = 0;    // bytes/s the trainer sent at (its egress)
  double download = 0;  // bytes/s it received at (its ingress)
};

// One model stream in a trainer's report, as the trainer timed it.
struct StreamSample {
  TrainerId peer = 0;  // the receiver (sent) or the sender (received)
  double bytes = 0;
  double start_seconds = 0;  // from the direction's earliest stream in the report
  double seconds = 0;        // first byte to last
};

// One trainer's measured transfers since its last report (P2P modes): bytes sent and received and
// how long each direction was busy, and each stream when the trainer reports them.
struct TransferSample {
  double sent_bytes = 0;
  double send_seconds = 0;
  double received_bytes = 0;
  double receive_seconds = 0;
  int models_sent = 0;  // completed model transfers among the bytes sent
  std::vector<StreamSample> sent_streams = {};
  std::vector<StreamSample> received_streams = {};
};

class BandwidthEstimator {
 public:
  // Samples kept per trainer and direction.
  static constexpr int kWindow = 8;
  // What the peer-to-peer policies assume before any sample.
  static constexpr LinkRates kPolicyInitial = {1, 1};
  static constexpr double kMinSampleBytes = 64 * 1024;

  // `initial` is assumed for trainers with no sample yet.
  explicit BandwidthEstimator(LinkRates initial = kPolicyInitial) : initial_(initial) {}

  // The most bytes/s `streams` prove their link carried: over every window from one stream's
  // start to another's end, the bytes of the streams that ran wholly inside it over the window's
  // length (all of them crossed the link within it, so each is a lower bound of its rate), over
  // the windows that carry at least kMinSampleBytes (a smaller one's time is mostly latency).
  // Streams without bytes or with a span that is not positive and finite are skipped; 0 when no
  // window qualifies. O(k^2) in the k streams.
  static double ProvenRate(const std::vector<StreamSample>& streams);

  // One direction's transfer: `bytes` moved in `seconds` of busy time. INVALID_ARGUMENT (nothing
  // changes) unless both are positive and finite. Samples below kMinSampleBytes are ignored (OK):
  // their time is mostly latency, not bandwidth.
  absl::Status AddUpload(TrainerId trainer, double bytes, double seconds);
  absl::Status AddDownload(TrainerId trainer, double bytes, double seconds);
  // Both directions of a report: a direction's sample is its streams' ProvenRate when it has
  // streams, else its bytes over its busy seconds. A direction without bytes carries no rate and a
  // bad one is dropped (a report never fails on its measurements).
  void Observe(TrainerId trainer, const TransferSample& sample);

  // The estimate; for a direction without samples, the mean of the other trainers' estimates in
  // that direction, or `initial` when there are none.
  LinkRates Estimate(TrainerId trainer) const;
  // Whether the trainer has samples in both directions.
  bool Measured(TrainerId trainer) const;
  // The estimated rate (above) from `sender` to each receiver it sent a measured stream to (at
  // least kMinSampleBytes), by receiver id. At most kMaxPairs pairs are kept: streams of further
  // pairs are not tracked until a trainer leaves (Forget).
  std::vector<std::pair<TrainerId, double>> SendsOf(TrainerId sender) const;
  static constexpr size_t kMaxPairs = 4096;
  // The estimate once the trainer is Measured; nullopt before.
  std::optional<LinkRates> MeasuredEstimate(TrainerId trainer) const {
    if (!Measured(trainer)) return std::nullopt;
    return Estimate(trainer);
  }
  // Drops the trainer's samples, and its pairs' both ways.
  void Forget(TrainerId trainer);

 private:
  struct Samples {
    std::deque<double> upload;  // the newest last, at most kWindow
    std::deque<double> download;
  };
  absl::Status Add(TrainerId trainer, double bytes, double seconds,
                   std::deque<double> Samples::*direction);
  void AddRate(TrainerId trainer, double rate, std::deque<double> Samples::*direction);
  void AddPairSample(TrainerId sender, TrainerId receiver, const StreamSample& stream);
  // The estimate from one direction's samples (the header's rule); nullopt without samples.
  static std::optional<double> Achieved(const std::deque<double>& samples);
  double MeanOf(std::deque<double> Samples::*direction, double fallback) const;

  const LinkRates initial_;
  absl::btree_map<TrainerId, Samples> rates_;  // ordered: MeanOf sums in a fixed order
  // Both directions' means, computed when first needed after a change (a round's plan asks for
  // every unmeasured trainer's estimate: O(n) once, not per trainer).
  mutable std::optional<LinkRates> means_;
  // (sender, receiver) -> that pair's stream rates, the newest last, at most kWindow.
  absl::btree_map<std::pair<TrainerId, TrainerId>, std::deque<double>> pairs_;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_BANDWIDTH_ESTIMATOR_H_
