// The coordinator's control channel to the store shards: who may push, and when a round closes.
#ifndef SYNCOPATE_COORDINATOR_STORE_CONTROL_H_
#define SYNCOPATE_COORDINATOR_STORE_CONTROL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "sync/membership.h"
#include "syncopate/v1/store.grpc.pb.h"

namespace syncopate::coordinator {

// Implementations are called from the coordinator's action thread only.
class StoreControl {
 public:
  virtual ~StoreControl() = default;
  // Replaces the push membership on every shard. OK only when every shard accepted it.
  virtual absl::Status SetMembership(const std::vector<sync::Member>& members) = 0;
  // Closes a round on every shard. OK only when every shard closed it (closing is idempotent, so a
  // retry after a partial failure is safe).
  virtual absl::Status CloseRound(const v1::CloseRoundRequest& request) = 0;
  virtual std::vector<std::string> addresses() const = 0;
};

// StoreControl over gRPC, one channel per shard; every call has `timeout`.
class GrpcStoreControl final : public StoreControl {
 public:
  GrpcStoreControl(std::vector<std::string> addresses, absl::Duration timeout);

  absl::Status SetMembership(const std::vector<sync::Member>& members) override;
  absl::Status CloseRound(const v1::CloseRoundRequest& request) override;
  std::vector<std::string> addresses() const override { return addresses_; }

 private:
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<v1::ParameterStore::Stub>> stubs_;
  absl::Duration timeout_;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_STORE_CONTROL_H_
