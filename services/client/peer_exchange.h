// The trainer's side of the peer-to-peer modes' data plane: a Peer service that receives other
// trainers' models, an inbox that hands them to the worker by round, and a sender that streams
// this trainer's model to its receivers. Both directions can be held to an emulated link rate
// (token buckets on the real transfers), and both are timed so the coordinator can estimate every
// trainer's bandwidth from real transfers.
#ifndef SYNCOPATE_CLIENT_PEER_EXCHANGE_H_
#define SYNCOPATE_CLIENT_PEER_EXCHANGE_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/token_bucket.h"
#include "client/transfer_stream.h"
#include "rpc/authorizer.h"
#include "rpc/credentials.h"
#include "rpc/grpc_util.h"
#include "rpc/push_assembler.h"
#include "rpc/stream_watchdog.h"
#include "syncopate/v1/coordinator.pb.h"
#include "syncopate/v1/peer.grpc.pb.h"
#include "tensor/tensor.h"

namespace syncopate::client {

// One completed model transfer, as TransferMeter::Take gives it.
struct StreamTimes {
  uint64_t peer = 0;
  double bytes = 0;
  double start_seconds = 0;  // from the earliest transfer taken with it
  double seconds = 0;
};

struct TransferTotals {
  double bytes = 0;
  double seconds = 0;                // first byte to last, over concurrent streams
  int transfers = 0;                 // completed model transfers
  std::vector<StreamTimes> streams;  // the first TransferMeter::kMaxStreams of them
};

// Bytes moved in one direction by completed model transfers, the span they took, and each
// transfer's peer and times. Thread-safe.
class TransferMeter {
 public:
  // Transfers kept one by one between two Takes; the totals count every transfer.
  static constexpr int kMaxStreams = 256;

  // A transfer to or from trainer `peer` that moved `bytes` from `start` to `end`.
  void Record(uint64_t peer, uint64_t bytes, absl::Time start, absl::Time end);
  // What was recorded since the last Take, and resets it.
  TransferTotals Take();

 private:
  struct Stream {
    uint64_t peer;
    uint64_t bytes;
    absl::Time start;
    absl::Time end;
  };
  absl::Mutex mu_;
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int transfers_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::Time> first_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
  std::vector<Stream> streams_ ABSL_GUARDED_BY(mu_);
};

// A peer's model as an exchange takes it, with the push-sum mass it carries: the share of its
// sender's weight (MixInto).
struct PeerModel {
  tensor::TensorMap model;
  double mass = 1;
};

// What a model's sender has sent to this receiver so far, by its running sums (PushHeader's
// mass_ledger, mass_sent_total and receiver_incarnation).
struct LedgerTotal {
  uint64_t ledger = 0;  // the sender's running sums; 0: none (the model carries its share)
  double sent_total = 0;
  uint64_t receiver_incarnation = 0;  // the incarnation the total was sent to; 0: unsaid
};

// Adds `model` from `sender` to `models`, newer than the one they hold from it: it replaces that
// one, whose mass it takes on.
void AddNewer(std::map<uint64_t, PeerModel>& models, uint64_t sender, PeerModel model);

// Models received from peers, by round and sender. Thread-safe.
class ExchangeInbox {
 public:
  // Models that may wait for the worker by default, per sender and in all: a peer cannot grow
  // this trainer's memory without bound with rounds to come (honest peers are a round or two
  // ahead at most). 512 models of a large model is still a lot of memory: the trainer's
  // --peer-inbox-models sets it lower.
  static constexpr int kMaxPendingPerSender = 8;
  static constexpr int kMaxPending = 512;

  // At least one model of each kind may wait. The deadlines of Collect and TakeLatest are times
  // of `clock`.
  explicit ExchangeInbox(int max_per_sender = kMaxPendingPerSender, int max_pending = kMaxPending,
                         const base::Clock& clock = base::MonotonicClock::Get())
      : max_per_sender_(std::max(1, max_per_sender)),
        max_pending_(std::max(1, max_pending)),
        clock_(clock) {}

  // This trainer's incarnation (its Welcome's): a model addressed to another one is refused.
  void SetIncarnation(uint64_t incarnation);
  // Records the names of the peers the coordinator named in `exchange` (PeerRef.name): a model
  // under one of those ids is then taken only from a caller of that name.
  void NamePeers(const v1::PeerExchange& exchange);
  // A round exchange's plan (not a background one, whose receivers are not told their senders), as
  // the worker starts the exchange: records the names in `exchange` (NamePeers) and its senders
  // (receive_from). A model of that round from a trainer not among them is then refused
  // (Deposit), and one that arrived before is dropped with a warning. Planned again, the senders
  // add up. A plan for a round the worker has moved past is ignored.
  void PlanRound(const v1::PeerExchange& exchange);
  // The name the coordinator gave `sender`, if it named it yet.
  std::optional<std::string> NameOf(uint64_t sender);
  // `caller`: the name in the sending trainer's certificate; empty when it cannot be told (no TLS,
  // or a trainer pool certificate). ALREADY_EXISTS when `sender` already delivered round `round`;
  // FAILED_PRECONDITION for a round the worker has moved past; PERMISSION_DENIED when the round's
  // plan is known and does not name `sender` as one of its senders; RESOURCE_EXHAUSTED when
  // `sender` has its limit of models waiting or the inbox its total (nothing is kept then). The
  // caller is checked against the coordinator's name for `sender` when the model is taken
  // (Collect, TakeLatest), and a model from another caller is dropped with a warning; the Peer
  // service refuses it at once when the name is known already. `mass`: the model's push-sum share.
  // With a `ledger`, the model carries instead, when it is taken, what the ledger's total grew
  // since the last model taken from that ledger (all of it for the first): a share whose model
  // failed, was refused or dropped comes with the next one taken, and none counts twice.
  // FAILED_PRECONDITION also when the ledger's total was sent to another incarnation of this
  // trainer (SetIncarnation; one that arrived before it was set is dropped when taken).
  absl::Status Deposit(int64_t round, uint64_t sender, tensor::TensorMap model,
                       const std::string& caller = "", double mass = 1, LedgerTotal ledger = {});
  // Waits until every sender in `senders` delivered round `round` or is gone (MarkGone), or until
  // `deadline`; returns what arrived (possibly less) and forgets every round up to `round`.
  std::map<uint64_t, PeerModel> Collect(int64_t round, const std::vector<uint64_t>& senders,
                                        absl::Time deadline);
  // `sender` left the job: the exchange under way (or the next one) stops waiting for it. A later
  // round, planned after it left, waits for it again (it may have rejoined under the same id).
  void MarkGone(uint64_t sender);
  // Background exchanges (selmcast-ssp): every sender's newest model that arrived, carrying the
  // mass of all its models that arrived (none is lost); the inbox is emptied. Waits until a model
  // arrived or until `wait_until` (by default, not at all).
  std::map<uint64_t, PeerModel> TakeLatest(absl::Time wait_until = absl::InfinitePast());
  // Waits in real time until a thread waits in Collect or TakeLatest for models to arrive, or for
  // `timeout`; whether one does. For tests that deliver a model to a receiver already waiting.
  bool AwaitWaiter(absl::Duration timeout = absl::Seconds(30));

 private:
  const int max_per_sender_;
  const int max_pending_;
  const base::Clock& clock_;
  absl::Mutex mu_;
  int64_t done_round_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t incarnation_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<int64_t> collecting_ ABSL_GUARDED_BY(mu_);  // the round Collect waits for
  std::map<uint64_t, int64_t> gone_ ABSL_GUARDED_BY(mu_);   // sender -> last round not to wait
  // A model as it arrived (its mass: its share), with the name in its sender's certificate ("":
  // unchecked) and its sender's running sum.
  struct Arrival {
    PeerModel model;
    std::string caller;
    LedgerTotal ledger;
  };
  // `arrival` as `sender`'s model is taken, carrying its credit (Credit); nullopt when it is not
  // from the named sender (FromNamedSender) or was addressed to another incarnation.
  std::optional<PeerModel> Take(uint64_t sender, Arrival& arrival)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `arrival` may be taken as `sender`'s: its caller is unchecked, or the coordinator
  // has not named `sender` (nothing to check against), or named it so.
  bool FromNamedSender(uint64_t sender, const Arrival& arrival) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Whether round `round`'s plan, when known, names `sender` among its senders.
  bool Planned(int64_t round, uint64_t sender) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Drops every waiting model that FromNamedSender and Planned no longer allow, freeing its places.
  void DropDisallowed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The mass a model taken from `sender` carries (Deposit's contract), for Take; records the
  // ledger's total.
  double Credit(uint64_t sender, double share, const LedgerTotal& ledger)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::map<int64_t, std::map<uint64_t, Arrival>> rounds_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::string> names_ ABSL_GUARDED_BY(mu_);        // sender -> its name
  std::map<int64_t, std::set<uint64_t>> plans_ ABSL_GUARDED_BY(mu_);  // round -> its senders
  // (sender, ledger) -> the highest total of the models taken from it.
  std::map<std::pair<uint64_t, uint64_t>, double> credited_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, int> pending_by_sender_ ABSL_GUARDED_BY(mu_);  // models in rounds_
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;  // threads in Collect or TakeLatest
};

// The model a validated peer stream carries (PushAssembler's output), as the inbox keeps it.
tensor::TensorMap ToTensorMap(const rpc::StagedPush& push);

// Looks tensors up in `model`'s shapes (each a vector of its element count), for PeerService.
rpc::SpecLookup ShapeLookup(const tensor::TensorMap& model);

// Receives peers' models into an inbox, each model on an Exchange call or one after another on a
// sender's Transfer stream (docs/transport.md). `lookup` gives this trainer's tensor shapes; a
// model whose tensors do not match, or whose mass (PushHeader.weight) is negative or not finite, is
// refused (INVALID_ARGUMENT / NOT_FOUND) and nothing is deposited; a model the inbox refuses by its
// sender (another trainer's name, not a sender of the round's plan: PERMISSION_DENIED) is counted
// as a refused call. A refusal ends the call or the stream with its status.
// Served with gRPC's callback API: a stream paced by `ingress` waits on a timer, not a thread. The
// stream is read raw, its payloads decoded without a copy (rpc/push_reactor.h,
// rpc/push_stream_reactor.h).
class PeerService final : public v1::Peer::WithRawCallbackMethod_Exchange<
                              v1::Peer::WithRawCallbackMethod_Transfer<v1::Peer::Service>> {
 public:
  // `authorizer` allows a stream only from a trainer (docs/security.md). With a `watchdog`
  // (outliving the server), a stream quiet for its idle time is cancelled.
  PeerService(ExchangeInbox& inbox, rpc::SpecLookup lookup, base::TokenBucket* ingress,
              TransferMeter& received, rpc::Authorizer authorizer,
              rpc::StreamWatchdog* watchdog = nullptr);

  // A stream of v1::PushMessage in, a v1::ExchangeReply out.
  grpc::ServerReadReactor<grpc::ByteBuffer>* Exchange(grpc::CallbackServerContext* context,
                                                      grpc::ByteBuffer* response) override;
  // v1::PeerTransferRequest in, a v1::ExchangeReply out per model.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Transfer(
      grpc::CallbackServerContext* context) override;

 private:
  // Whether `caller` may send a model as `sender`: checked now when the coordinator named `sender`
  // already, else when its model is taken (ExchangeInbox::Deposit).
  absl::Status MaySend(const std::optional<rpc::Identity>& caller, uint64_t sender);
  // Deposits a model from `caller` whose header arrived at `start`, or returns its refusal.
  absl::Status Deliver(const std::optional<rpc::Identity>& caller, absl::Time start,
                       absl::StatusOr<rpc::StagedPush> push);
  // How long to wait before reading on after `payload` bytes (the ingress rate).
  absl::Duration Pace(size_t payload);

  ExchangeInbox& inbox_;
  rpc::SpecLookup lookup_;
  base::TokenBucket* ingress_;  // null: unlimited
  TransferMeter& received_;
  const rpc::Authorizer authorizer_;
  rpc::StreamWatchdog* const watchdog_;
};

// Streams this trainer's model to peers, each stream with its own deadline. A peer marked
// `low_priority` (SelMcast's Pareto additions) is sent to only on the upload that the others leave
// idle: with an emulated egress rate, out of the tokens their transfers leave in the bucket
// (TokenBucket::TakeIdle), in chunks of at most kLowPriorityChunkBytes, so that a required
// transfer waits at most one such chunk for it; without one, only while no required transfer of
// this sender runs (the link's idle rate cannot be seen then). Its stream opens once the first
// chunk may go. A stream starved for longer than its receiver's idle timeout is cancelled there.
class PeerSender {
 public:
  static constexpr uint32_t kLowPriorityChunkBytes = 64 * 1024;
  // How often a low-priority transfer waiting for an idle upload looks at its cancel and deadline.
  static constexpr absl::Duration kIdlePoll = absl::Milliseconds(5);
  // A send that fails at connection set-up (the peer refused the connection, or the TLS handshake
  // was cut, before the stream's header went out) is tried again after these backoffs, while its
  // deadline leaves time for the wait.
  static constexpr base::BackoffOptions kSetupBackoff{absl::Milliseconds(50), absl::Seconds(1),
                                                      2.0};

  // `credentials`: this trainer's certificate (or none). Deadlines are times of `clock`, which
  // also times the transfers and paces the retries.
  PeerSender(base::TokenBucket* egress, TransferMeter& sent, rpc::Credentials credentials,
             uint32_t chunk_bytes = tensor::kDefaultChunkBytes,
             const base::Clock& clock = base::MonotonicClock::Get());

  // Sends `model`, carrying push-sum mass `mass` to each, as round `round` from `sender` to every
  // peer, each at its priority; returns each peer's outcome in order (a dead or slow peer fails
  // with UNAVAILABLE or DEADLINE_EXCEEDED at `deadline`). A peer that answers OK took the model
  // into that round. Every send writes `model`'s memory without a copy (chunk_writer.h): gRPC may
  // hold it for a while after the call returns.
  std::vector<absl::Status> SendToAll(const std::vector<v1::PeerRef>& peers, uint64_t sender,
                                      int64_t round, const tensor::SharedTensorMap& model,
                                      double mass, absl::Time deadline);
  // A share booked on this sender's running sums for one receiver (Book): what a model carries.
  struct Booked {
    double share = 0;       // PushHeader.weight
    double sent_total = 0;  // PushHeader.mass_sent_total
  };
  // Books `share` (as the wire's float carries it) on the running sums for `receiver` (its
  // incarnation). With `unless_on_its_way`, books nothing (share 0) while a share may still be on
  // its way to it: none was answered OK since it was booked. A negative or non-finite share is
  // carried as it is, and not booked (the receiver refuses it).
  Booked Book(const v1::PeerRef& receiver, double share, bool unless_on_its_way = false);
  // Sends to one peer, carrying `booked`, at its priority (PeerRef.low_priority); CANCELLED when
  // `cancel` (may be null) fires first.
  // Either way the share stays on the running sums: a transfer that fails, or is cancelled as it
  // ends, may have been taken after all, so its share does not go back to the sender; the next
  // model that reaches the peer carries it.
  absl::Status SendBooked(const v1::PeerRef& peer, uint64_t sender, int64_t round,
                          const tensor::SharedTensorMap& model, const Booked& booked,
                          absl::Time deadline, TransferCancel* cancel = nullptr);
  // SendBooked with Book(peer, mass).
  absl::Status SendOne(const v1::PeerRef& peer, uint64_t sender, int64_t round,
                       const tensor::SharedTensorMap& model, double mass, absl::Time deadline,
                       TransferCancel* cancel = nullptr);
  // The coordinator said trainer `trainer_id` left the job: its transfers under way are cancelled,
  // and a send to it that fails is not tried again, until a send reaches it (it rejoined).
  void PeerLeft(uint64_t trainer_id);
  // Sends tried again after a failure at connection set-up (kSetupBackoff), since construction.
  int64_t setup_retries() const { return setup_retries_.load(std::memory_order_relaxed); }
  // How the models sent from now on carry their values: CODEC_NONE (float32, the default),
  // CODEC_BF16 or CODEC_FP16 (each value rounded to the nearest the codec holds as it is written).
  void SetCodec(v1::Codec codec) { codec_.store(codec, std::memory_order_relaxed); }
  // How models travel to a peer: one after another on a long-lived Transfer stream per peer (the
  // default), or each on an Exchange call of its own.
  void SetTransport(Transport transport) { transport_.store(transport, std::memory_order_relaxed); }

 private:
  // What this sender keeps per peer address: one channel, the Exchange method on it (written raw,
  // rpc/chunk_frames.h), and the Transfer stream idle between two sends to it.
  struct PeerChannel {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<rpc::RawClientStream> exchange;
    std::unique_ptr<TransferStream> idle;
  };
  PeerChannel& ChannelTo(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stream idle to `address`, or a new one (another send to it holds the idle one).
  std::unique_ptr<TransferStream> TakeStream(const std::string& address);
  // `stream` is idle again: kept for the next send to `address`, unless another is kept already.
  void ReturnStream(const std::string& address, std::unique_ptr<TransferStream> stream);
  // One attempt to send the model whose header is `header` and whose chunks `write_chunks` writes,
  // on a call of its own (Transport::kCall); `header_sent` as TransferStream::PushOptions.
  absl::Status SendByCall(const std::string& address, const grpc::ByteBuffer& header,
                          const TransferStream::WriteChunks& write_chunks, absl::Time deadline,
                          TransferCancel* cancel, bool* header_sent);
  // Waits until a low-priority chunk of `bytes` may go (the class comment); false when `cancel`
  // fired or `deadline` passed first.
  bool AwaitIdleUpload(size_t bytes, TransferCancel* cancel, absl::Time deadline);
  // Whether the coordinator said `trainer_id` left and no send reached it since.
  bool Gone(uint64_t trainer_id);
  // Adds `transfers` (may be negative) to the required transfers running.
  void CountRequired(int transfers);
  // SendBooked without counting: a required transfer must be counted already (CountRequired),
  // and is uncounted as it ends.
  absl::Status Send(const v1::PeerRef& peer, uint64_t sender, int64_t round,
                    const tensor::SharedTensorMap& model, const Booked& booked, absl::Time deadline,
                    TransferCancel* cancel);

  base::TokenBucket* egress_;
  TransferMeter& sent_;
  const rpc::Credentials credentials_;
  const uint32_t chunk_bytes_;
  const base::Clock& clock_;
  absl::Mutex mu_;
  std::map<std::string, PeerChannel> channels_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> gone_ ABSL_GUARDED_BY(mu_);  // PeerLeft, and no send reached them since
  // Transfers under way, by receiver: PeerLeft cancels them.
  std::multimap<uint64_t, TransferCancel*> running_ ABSL_GUARDED_BY(mu_);
  std::atomic<Transport> transport_{Transport::kStream};
  const uint64_t ledger_;  // random, not 0
  // (receiver, its incarnation) -> the mass sent to it so far, and the total as of the newest
  // transfer it answered OK.
  std::map<std::pair<uint64_t, uint64_t>, double> sent_total_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<uint64_t, uint64_t>, double> confirmed_total_ ABSL_GUARDED_BY(mu_);
  int required_running_ ABSL_GUARDED_BY(mu_) = 0;  // transfers not at low priority
  std::atomic<int64_t> setup_retries_{0};
  std::atomic<v1::Codec> codec_{v1::CODEC_NONE};
};

// The exchange's mixing rule, push-sum (Kempe et al., 2003; as in Stochastic Gradient Push, Assran
// et al., 2019; docs/modes.md "Mixing weights"). Every trainer holds a mass: 1 when the job starts,
// 0 when it joins a job under way (its untrained model then weighs nothing, and it takes its
// peers' models). A sender keeps one share of its mass and gives one to each receiver with its
// model (PeerSender's `mass`); a share whose transfer fails comes with the sender's next model to
// that receiver (running sums, ExchangeInbox::Deposit). `own` (with
// the mass `own_mass` it kept) becomes the mass-weighted mean of itself and every received model,
// and its mass the sum: the mixing then moves no trainer's data more than another's, whatever the
// plan's in- and out-degrees. When every mass is 0, `own` stays as it is. Returns the new mass.
// INVALID_ARGUMENT (`own` unchanged) when a mass is negative or not finite, or a received model
// lacks a tensor of `own` or has a different length.
absl::StatusOr<double> MixInto(tensor::TensorMap& own, double own_mass,
                               const std::map<uint64_t, PeerModel>& received);

// The push-sum share of `mass` that a trainer sending to `receivers` peers keeps, and gives each:
// mass / (receivers + 1), rounded as the wire's float carries it, so that what a sender deducts is
// what arrives.
double PushSumShare(double mass, size_t receivers);

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_PEER_EXCHANGE_H_
