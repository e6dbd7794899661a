// The coordinator's control channel to the store shards: who may push, and when a round closes.
#ifndef SYNCOPATE_COORDINATOR_STORE_CONTROL_H_
#define SYNCOPATE_COORDINATOR_STORE_CONTROL_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rpc/credentials.h"
#include "sync/membership.h"
#include "sync/policy.h"
#include "syncopate/v1/store.grpc.pb.h"

namespace syncopate::coordinator {

// A trainer in a shard's membership, with its last cut (-1: no round took its pushes yet).
struct ShardMember {
  sync::TrainerId id = 0;
  uint64_t incarnation = 0;
  int64_t last_cut = -1;
  std::string name = {};  // empty when the shard does not know it
};

// One shard as it answered: which process (incarnation) and what it holds.
struct ShardState {
  uint64_t incarnation = 0;  // new at every start of the shard's process
  int64_t last_closed_round = -1;
  bool holds_model = false;
  int64_t rounds_skipped = 0;  // SetMembership only: rounds skipped to catch up with `round`
  // Probe only: the membership in force, once a coordinator set one.
  bool has_membership = false;
  std::vector<ShardMember> members;
  std::optional<v1::JobEnd> job_end;  // Probe only: how the job ends, once it began ending
};

// What every shard is told whenever the membership changes.
struct StoreMembership {
  std::vector<sync::Member> members;
  // The last round the coordinator closed on every shard: a shard behind it catches up.
  int64_t round = 0;
  // How the job applies pushes (NONE: it takes none), and the weight of one immediate push
  // (1/N under the default step-size rule, 1 under "sum"): the shards weigh pushes by these, not by
  // what a push states.
  v1::ApplyMode apply_mode = v1::APPLY_MODE_NONE;
  float immediate_weight = 1;
  // How the job's pushes carry their values: the shards refuse another codec.
  v1::Codec codec = v1::CODEC_NONE;
  // Once training began ending with a final average: kept by the shards for a coordinator that
  // takes the job over.
  std::optional<v1::JobEnd> job_end;
};

// Implementations are called from the coordinator's action thread only.
class StoreControl {
 public:
  virtual ~StoreControl() = default;
  // Replaces the push membership and rule on every shard, and brings a shard behind
  // `membership.round` (restarted from a checkpoint) up to it. The shards' states, in shard order;
  // an error unless every shard accepted it (it is idempotent, so a retry after a partial failure
  // is safe).
  virtual absl::StatusOr<std::vector<ShardState>> SetMembership(
      const StoreMembership& membership) = 0;
  // Closes a round on every shard. OK only when every shard closed it (closing is idempotent, so a
  // retry after a partial failure is safe).
  virtual absl::Status CloseRound(const v1::CloseRoundRequest& request) = 0;
  // Every shard's state with its membership (rounds_skipped 0); an error when one cannot be
  // reached.
  virtual absl::StatusOr<std::vector<ShardState>> Probe() = 0;
  virtual std::vector<std::string> addresses() const = 0;
};

// StoreControl over gRPC, one channel per shard (with `credentials`: the coordinator's
// certificate); every call has `timeout`.
class GrpcStoreControl final : public StoreControl {
 public:
  GrpcStoreControl(std::vector<std::string> addresses, const rpc::Credentials& credentials,
                   absl::Duration timeout);

  absl::StatusOr<std::vector<ShardState>> SetMembership(const StoreMembership& membership) override;
  absl::Status CloseRound(const v1::CloseRoundRequest& request) override;
  absl::StatusOr<std::vector<ShardState>> Probe() override;
  std::vector<std::string> addresses() const override { return addresses_; }

 private:
  // Calls `call(shard, stub, context)` on every shard in order, each within `timeout`; the first
  // failure, with its code, naming `what` and the shard.
  absl::Status OnEveryShard(const std::string& what,
                            const std::function<grpc::Status(size_t, v1::ParameterStore::Stub&,
                                                             grpc::ClientContext*)>& call);

  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<v1::ParameterStore::Stub>> stubs_;
  absl::Duration timeout_;
};

// How the stores apply the pushes of a mode with `mode` (APPLY_MODE_NONE: peer-to-peer, no pushes).
v1::ApplyMode ApplyModeOf(sync::PushMode mode);

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_STORE_CONTROL_H_
