// The client library's transports to the coordinator (the control plane) and the store shards (the
// data plane), as interfaces; the third, to the peers, is client/peer_link.h. The library's
// protocol logic takes them by reference, so it runs against the real gRPC clients
// (client/session_client.h, client/store_client.h) in a process and against fakes in unit tests.
#ifndef SYNCOPATE_CLIENT_LINKS_H_
#define SYNCOPATE_CLIENT_LINKS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "syncopate/v1/coordinator.pb.h"
#include "syncopate/v1/store.pb.h"
#include "tensor/tensor_spec.h"

namespace syncopate::client {

// A store call given up because the trainer is stopping (StoreClient::set_interrupt): CANCELLED,
// marked so that the session can tell it from other cancellations (IsGivenUpForStop).
inline constexpr char kGivenUpForStop[] = "type.syncopate/given-up-for-stop";
inline absl::Status GivenUpForStop(absl::string_view message) {
  absl::Status status = absl::CancelledError(message);
  status.SetPayload(kGivenUpForStop, absl::Cord("1"));
  return status;
}
inline bool IsGivenUpForStop(const absl::Status& status) {
  return absl::IsCancelled(status) && status.GetPayload(kGivenUpForStop).has_value();
}

// One trainer's session with the coordinator, opened (joined) by whoever made it. Thread-safe.
class CoordinatorLink {
 public:
  virtual ~CoordinatorLink() = default;

  // The coordinator's answer to the join: the trainer's id and incarnation, the mode's push and
  // pull rules, the stores. Fixed for the session's life.
  virtual const v1::Welcome& welcome() const = 0;
  // Waits up to `timeout` for the next Proceed. DEADLINE_EXCEEDED on timeout (the caller may wait
  // again); ABORTED when evicted; OUT_OF_RANGE when training is done; UNAVAILABLE when the
  // session is gone.
  virtual absl::StatusOr<v1::Proceed> WaitProceed(absl::Duration timeout) = 0;
  // How many directives of any kind the link has read from the coordinator, HeartbeatAcks
  // included: it moves while the coordinator is alive, also while the mode holds this trainer's
  // grant. A link that does not count returns 0 (a directive timeout then runs from the start of
  // the wait). Thread-safe.
  virtual uint64_t directives_heard() const { return 0; }
  // Reports a completed clock (after its push). UNAVAILABLE when the session is gone.
  virtual absl::Status ReportClock(const v1::ClockReport& report) = 0;
  // Sends heartbeats carrying `timings()` every welcome().heartbeat_interval_seconds until the
  // session ends (Leave, or the stream breaks).
  virtual void StartHeartbeats(std::function<v1::TrainerTimings()> timings) = 0;
  // Says whether the trainer paused its training on purpose (Heartbeat.paused), at once and with
  // every heartbeat after: the coordinator then does not evict it for making no progress.
  // Thread-safe.
  virtual void SetPaused(bool paused) = 0;
  // Leaves the job with `leave`: its reason, the test accuracy of the final average when this
  // trainer evaluated it (Proceed.final_average), an accuracy evaluated since the last report.
  // `finished`: the trainer finished the job (the final average), so the Leave must reach the
  // coordinator and outlives a session resume (bounded by the resume's own deadline); any other
  // Leave is best effort, bounded by a short deadline. Idempotent.
  virtual void Leave(const v1::Leave& leave, bool finished) = 0;
};

// A model as pulled from every store shard.
struct PulledModel {
  tensor::TensorMap tensors;
  int64_t round = -1;               // -1 for a live pull
  std::vector<uint32_t> checksums;  // per shard (snapshot pulls; 0 for live)
  uint64_t bytes = 0;
};

// The parameter store, all shards of it. Used by one thread at a time. Every call rides out a
// shard's restart: transient failures (UNAVAILABLE, RESOURCE_EXHAUSTED) are retried with backoff
// within the link's allowance, and returned only when it is spent.
class StoreLink {
 public:
  virtual ~StoreLink() = default;

  // Creates the tensors on their shards (no-op where they exist). The store's refusal as it is
  // (FAILED_PRECONDITION for a tensor that exists with another shape, new tensors after rounds
  // have closed, or a trainer that is not a member; INVALID_ARGUMENT for a value that is not
  // finite); UNAVAILABLE when a shard stays unreachable.
  virtual absl::Status Initialize(const v1::PushHeader& header,
                                  const tensor::TensorMap& values) = 0;
  // Pushes a delta (the header's sequence makes a retry apply at most once), in the header's
  // codec. Returns the payload bytes sent (compressed ones under a codec). The store's refusal as
  // it is (NOT_FOUND for a tensor the store does not hold in that shape; INVALID_ARGUMENT for a
  // wrong length or a value that is not finite; FAILED_PRECONDITION for a trainer that left, was
  // evicted or has a stale incarnation); UNAVAILABLE when a shard stays unreachable. The link may
  // keep `delta` until the push's bytes are sent.
  virtual absl::StatusOr<uint64_t> Push(const v1::PushHeader& header,
                                        tensor::SharedTensorMap delta) = 0;
  // Pulls the live model (round < 0) or round `round`. A round the store no longer keeps is
  // replaced by a newer one that every shard serves, the same snapshot for every puller
  // (`PulledModel::round` says which). FAILED_PRECONDITION for a round not closed yet; UNAVAILABLE
  // as above.
  virtual absl::StatusOr<PulledModel> Pull(int64_t round) = 0;
  // Before the trainer leaves: re-sends to every shard that restarted since this trainer last
  // heard from it what the restart lost of its acknowledged pushes, as its next push there would
  // have (docs/faults.md). A trainer learns of a restart from its next push to the shard, and one
  // that leaves without pushing there again would leave the loss unrepaired. Of `identity` only
  // the trainer's id and incarnation are read. Asks only shards it keeps unsaved pushes for, and
  // waits for them a bounded time; UNAVAILABLE when one stays unreachable, the store's refusal as
  // it is.
  virtual absl::Status ResendWhatRestartsLost(const v1::PushHeader& identity) = 0;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_LINKS_H_
