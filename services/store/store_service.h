// The gRPC face of one parameter-store shard: translates ParameterStore RPCs into ParameterTable
// calls and table results into replies. Holds no model state of its own.
#ifndef SYNCOPATE_STORE_STORE_SERVICE_H_
#define SYNCOPATE_STORE_STORE_SERVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "rpc/authorizer.h"
#include "rpc/push_assembler.h"
#include "rpc/stream_watchdog.h"
#include "store/parameter_table.h"
#include "store/round_waiters.h"
#include "store/store_metrics.h"
#include "store/transfer_reactor.h"
#include "syncopate/v1/store.grpc.pb.h"

namespace syncopate::store {

// The service's methods: the streams raw (their chunks are not copied), the rest typed.
using StoreServiceBase = v1::ParameterStore::WithCallbackMethod_GetSchema<
    v1::ParameterStore::WithRawCallbackMethod_Initialize<
        v1::ParameterStore::WithRawCallbackMethod_Push<
            v1::ParameterStore::WithRawCallbackMethod_Pull<
                v1::ParameterStore::WithRawCallbackMethod_Transfer<
                    v1::ParameterStore::WithCallbackMethod_SetMembership<
                        v1::ParameterStore::WithCallbackMethod_CloseRound<
                            v1::ParameterStore::Service>>>>>>>;

// Thread-safe (the table is); `table` and `metrics` must outlive the service. Every method is
// served with gRPC's callback API, on gRPC's own threads: no thread is held per call or stream,
// and a unary call is answered on the thread that read it. Pulls go out from shared snapshots
// (pull_frames.h), with no copy of the model per puller.
//
// `authorizer` allows each call by the caller's certificate (when the server runs TLS;
// docs/security.md): SetMembership and CloseRound only to the coordinator; Initialize and Push only
// to trainers, each only under the caller's own trainer id (the membership names each member);
// GetSchema, Pull and Transfer to any process of the job, but a push on a Transfer stream only to
// a trainer under its own trainer id. A refusal changes nothing.
class StoreService final : public StoreServiceBase {
 public:
  // `incarnation` identifies this process's life of the shard (non-zero, new at every start): the
  // coordinator tells a restart by it.
  // With a `watchdog` (it must outlive the server), a push or pull stream quiet for its idle time
  // is cancelled. With `waiters` (it must outlive the server), a pull of a round not closed yet
  // waits for it there (pipelined grants) instead of being refused FAILED_PRECONDITION.
  StoreService(ParameterTable& table, StoreMetrics& metrics, uint32_t shard, uint32_t shard_count,
               uint64_t incarnation, rpc::Authorizer authorizer,
               rpc::StreamWatchdog* watchdog = nullptr, RoundWaiters* waiters = nullptr);

  grpc::ServerUnaryReactor* GetSchema(grpc::CallbackServerContext* ctx,
                                      const v1::GetSchemaRequest* request,
                                      v1::Schema* reply) override;
  // A stream of v1::PushMessage in, read raw (rpc/push_reactor.h), and a v1::PushReply out.
  grpc::ServerReadReactor<grpc::ByteBuffer>* Initialize(grpc::CallbackServerContext* ctx,
                                                        grpc::ByteBuffer* response) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* Push(grpc::CallbackServerContext* ctx,
                                                  grpc::ByteBuffer* response) override;
  // A v1::PullRequest in, a stream of v1::PullMessage out (as raw bytes: see pull_frames.h).
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Pull(grpc::CallbackServerContext* ctx,
                                                   const grpc::ByteBuffer* request) override;
  // A trainer's pushes and pulls on one long-lived stream (transfer_reactor.h), read and written
  // raw, each push authorized by its trainer id.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Transfer(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* SetMembership(grpc::CallbackServerContext* ctx,
                                          const v1::Membership* request,
                                          v1::SetMembershipReply* reply) override;
  grpc::ServerUnaryReactor* CloseRound(grpc::CallbackServerContext* ctx,
                                       const v1::CloseRoundRequest* request,
                                       v1::CloseRoundReply* reply) override;

 private:
  // Ends a push stream (`initialize`: Initialize's): checks the pusher, takes the push and writes
  // the reply into `response`.
  grpc::Status TakeStream(absl::StatusOr<rpc::StagedPush> push, bool initialize,
                          const std::optional<rpc::Identity>& caller, absl::Time start,
                          grpc::ByteBuffer* response);
  // Takes in a whole push stream, assembled; `initialize` selects Initialize's rules.
  absl::Status TakePush(rpc::StagedPush push, bool initialize, absl::Time start,
                        v1::PushReply* reply);
  // The unary calls' work.
  grpc::Status Schema(v1::Schema* reply);
  grpc::Status ChangeMembership(const v1::Membership& request, v1::SetMembershipReply* reply);
  grpc::Status Close(const v1::CloseRoundRequest& request, v1::CloseRoundReply* reply);
  // The snapshot a pull asks for.
  SnapshotOr PullSnapshot(const v1::PullRequest& request);
  // Hands `serve` the snapshot `request` names: now, or, for a round granted while it closes,
  // once it closes, on that thread (parked on the waiters under `ticket` for up to `patience`,
  // after `before_park` ran).
  void ServePull(const v1::PullRequest& request, absl::Duration patience,
                 RoundWaiters::Ticket ticket, const std::function<void()>& before_park,
                 std::function<void(SnapshotOr)> serve);
  // Counts a pull served, started at `start`.
  void Pulled(uint64_t bytes, absl::Time start);
  // Counts a failure and converts it for the wire.
  grpc::Status Finish(const absl::Status& status);
  // OK when `caller` may push (or initialize, `rpc_name`) as trainer `trainer_id`: a member a
  // membership named, with the caller's name (or a pool certificate). UNAVAILABLE (retried) while
  // no membership has named it; PERMISSION_DENIED for another trainer's id.
  absl::Status CheckPusher(const std::optional<rpc::Identity>& caller, uint64_t trainer_id,
                           const char* rpc_name);
  void UpdateGauges();
  // After anything that may have closed rounds (a close, a membership catch-up, the model's
  // initialization): serves the pulls that waited for them.
  void WakeWaitingPulls();

  ParameterTable& table_;
  StoreMetrics& metrics_;
  const uint32_t shard_;
  const uint32_t shard_count_;
  const uint64_t incarnation_;
  const rpc::Authorizer authorizer_;
  rpc::StreamWatchdog* const watchdog_;  // null: streams never time out
  RoundWaiters* const waiters_;          // null: a pull of a round not closed is refused
};

}  // namespace syncopate::store

#endif  // SYNCOPATE_STORE_STORE_SERVICE_H_
