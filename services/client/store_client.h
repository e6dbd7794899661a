// The trainer's side of the data plane: initialize, push deltas to and pull models from every store
// shard, each tensor to the shard its name hashes to.
#ifndef SYNCOPATE_CLIENT_STORE_CLIENT_H_
#define SYNCOPATE_CLIENT_STORE_CLIENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/token_bucket.h"
#include "client/chunk_writer.h"
#include "client/links.h"
#include "client/trainer_metrics.h"
#include "client/transfer_stream.h"
#include "client/unsaved_pushes.h"
#include "rpc/grpc_util.h"
#include "syncopate/v1/store.grpc.pb.h"
#include "tensor/tensor.h"

namespace syncopate::client {

// Emulated link limits on the trainer's traffic (null: none); shared with its peer transfers.
struct LinkLimits {
  base::TokenBucket* egress = nullptr;   // pushes
  base::TokenBucket* ingress = nullptr;  // pulls
};

// Thread-compatible: one trainer thread uses it. Calls to several shards run in parallel.
//
// Transient failures are retried per shard with capped exponential backoff and jitter, for up to
// `retry_for`: UNAVAILABLE (a shard down, restarting, or not yet reconciled by the coordinator)
// and RESOURCE_EXHAUSTED (backpressure); and a pull of a round the shard has not closed yet
// (FAILED_PRECONDITION), which the coordinator is closing. A shard's outage is logged when it
// starts and when it ends, not per attempt. Any other refusal is returned at once.
//
// Exactly once across a shard's restart: the client keeps, per shard, the pushes the shard took
// but has not checkpointed yet (UnsavedPushes), and every push names the shard incarnation it
// expects. A restarted shard refuses it (ABORTED); the client then learns from which checkpoint
// epoch the shard restored, re-sends what it lost since (round pushes go into the next round:
// their own rounds were lost on that shard), and retries the push (docs/faults.md).
class StoreClient final : public StoreLink {
 public:
  // `credentials`: this trainer's certificate (or none); `timeout` bounds each RPC;
  // `chunk_bytes` sizes stream chunks; `retry_for` bounds the retries of a call, `leave_within`
  // those of ResendWhatRestartsLost, its RPCs included.
  StoreClient(std::vector<std::string> addresses, const rpc::Credentials& credentials,
              absl::Duration timeout, uint32_t chunk_bytes = tensor::kDefaultChunkBytes,
              LinkLimits limits = {}, absl::Duration retry_for = absl::Minutes(2),
              absl::Duration leave_within = kLeaveWithin);

  size_t shard_count() const { return stubs_.size(); }
  // Counts the pushes re-sent after a restart and those no longer kept to re-send into `metrics`
  // (null: nowhere). Set before the first call.
  void set_metrics(TrainerMetrics* metrics) { metrics_ = metrics; }
  // Asked between the retries of Initialize, Push and Pull, on the calling thread (at least every
  // 200 ms while several shards' calls run): true gives the call up, at each shard's next retry,
  // with GivenUpForStop (links.h; the trainer is stopping, Session::Stop). Not asked by
  // ResendWhatRestartsLost, which a stopping trainer calls on its way out. Set before the first
  // call.
  void set_interrupt(std::function<bool()> interrupted) { interrupted_ = std::move(interrupted); }
  // How pushes and pulls travel to a shard (docs/transport.md): each on the trainer's long-lived
  // Transfer stream to it (the default), or each as a call of its own (Push, Pull). Set before
  // the first call.
  void set_transport(Transport transport) { transport_ = transport; }

  // Creates the tensors on their shards (no-op where they exist). Sends a copy of `values` (one
  // model's worth of memory while it is sent).
  absl::Status Initialize(const v1::PushHeader& header, const tensor::TensorMap& values) override;

  // Pushes a delta; a retry sends the same push (same sequence), and the store's idempotency key
  // keeps it from applying twice. Returns bytes sent. The delta's bytes go to gRPC without a copy
  // (rpc/chunk_frames.h): its messages hold `delta` until they are sent.
  absl::StatusOr<uint64_t> Push(const v1::PushHeader& header,
                                tensor::SharedTensorMap delta) override;

  // Pulls the live model (round < 0) or round `round` from every shard. A round a shard no longer
  // keeps is replaced by the newest round the shards serve: when their newest rounds differ (a
  // close under way), the pull is repeated at the newest of them on every shard, waiting out
  // shards that have not closed it yet, so the model is always one round's snapshot.
  absl::StatusOr<PulledModel> Pull(int64_t round) override;

  // One GetSchema per shard this client keeps unsaved pushes for. Returns within `leave_within`
  // (or `retry_for`, if shorter), its RPCs' deadlines included.
  absl::Status ResendWhatRestartsLost(const v1::PushHeader& identity) override;
  // The default `leave_within`: long enough for a crashed shard to come back (syncopate local
  // restarts one within about a second); short enough that a trainer stopped together with the
  // stores (an uninstall) leaves well within its pod's termination grace, not minutes later.
  static constexpr absl::Duration kLeaveWithin = absl::Seconds(15);

 private:
  // A call's context: its deadline is `timeout_` from now, or `give_up_at` if sooner.
  std::unique_ptr<grpc::ClientContext> Context(absl::Time give_up_at) const;
  // One Initialize or Push stream: the header, then `tensors` (entries of `model`) in chunks, in
  // the header's codec. The payload bytes written are added to `written` (may be null).
  absl::Status SendTo(size_t shard, bool initialize, const v1::PushHeader& header,
                      const tensor::SharedTensorMap& model, const TensorEntries& tensors,
                      v1::PushReply* reply, absl::Time give_up_at = absl::InfiniteFuture(),
                      uint64_t* written = nullptr);
  // Pushes to one shard: first what a restart of it lost, then this push; keeps what the shard
  // has not checkpointed yet. A restart found on the way is UNAVAILABLE (retried). `written`:
  // the payload bytes of this push's last attempt.
  absl::Status PushTo(size_t shard, const v1::PushHeader& header, const TensorEntries& tensors,
                      const tensor::SharedTensorMap& delta, uint64_t* written);
  // Re-sends the pushes shard `shard` lost in a restart, oldest first.
  absl::Status ResendLost(size_t shard, const v1::PushHeader& header,
                          absl::Time give_up_at = absl::InfiniteFuture());
  // Asks shard `shard` which process answers now; a new one (a restart) queues every push sum
  // kept for the shard to be re-sent. UNAVAILABLE when the shard cannot be reached in time; its
  // refusal otherwise.
  absl::Status LearnOfRestart(size_t shard, absl::Time give_up_at = absl::InfiniteFuture());
  // Records a push the shard took (its reply), or learns of its restart (an ABORTED refusal):
  // then learns of the restart (LearnOfRestart) and returns UNAVAILABLE.
  absl::Status Took(size_t shard, const v1::PushHeader& header, const tensor::TensorMap& delta,
                    const TensorEntries& tensors, const absl::Status& sent,
                    const v1::PushReply& reply, absl::Time give_up_at = absl::InfiniteFuture());
  // Pulls one shard's tensors into `out` (its checksums get that shard's one entry, its round the
  // round served: a newer one than asked when `round` was dropped).
  absl::Status PullFrom(size_t shard, int64_t round, PulledModel* out);
  // One pull of `round` from every shard, each part as its shard served it. A shard that has not
  // closed the round yet is waited for (retried as UNAVAILABLE).
  absl::StatusOr<std::vector<PulledModel>> PullShards(int64_t round);
  // Runs fn(shard) for every shard concurrently, each retried while transient (see above) for up
  // to `retry_for_` unless interrupted (set_interrupt), or until `give_up_at` if given (then
  // uninterrupted); the first error wins.
  absl::Status ForEachShard(const std::string& what, const std::function<absl::Status(size_t)>& fn,
                            std::optional<absl::Time> give_up_at = std::nullopt);

  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<v1::ParameterStore::Stub>> stubs_;
  // Per shard: Initialize and Push, written raw (rpc/chunk_frames.h); Pull, read raw
  // (pull_decoder.h).
  std::vector<rpc::RawClientStream> initializes_;
  std::vector<rpc::RawClientStream> pushes_;
  std::vector<rpc::RawServerStream> pulls_;
  // Per shard: the Transfer stream, touched only by the thread calling that shard.
  std::vector<std::unique_ptr<TransferStream>> streams_;
  Transport transport_ = Transport::kStream;
  absl::Duration timeout_;
  uint32_t chunk_bytes_;
  LinkLimits limits_;
  absl::Duration retry_for_;
  absl::Duration leave_within_;
  TrainerMetrics* metrics_ = nullptr;
  std::function<bool()> interrupted_;
  // Per shard, touched only by the thread pushing to that shard.
  std::vector<uint64_t> shard_incarnation_;  // 0 until the shard first answered
  std::vector<UnsavedPushes> unsaved_;
};

// One push on a store's Transfer stream (docs/transport.md): `header` (a PushMessage holding the
// push's header), the chunks `write_chunks` writes (false when a write failed), its end; the
// store's reply in `reply`.
absl::Status PushOnStream(TransferStream& stream, const grpc::ByteBuffer& header,
                          const std::function<bool(TransferStream::Writer&)>& write_chunks,
                          absl::Duration timeout, v1::PushReply* reply);

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_STORE_CLIENT_H_
