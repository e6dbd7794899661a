#include "client/peer_exchange.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/status_macros.h"
#include "client/chunk_writer.h"
#include "rpc/chunk_frames.h"
#include "rpc/grpc_util.h"
#include "rpc/identity.h"
#include "rpc/push_reactor.h"
#include "rpc/push_stream_reactor.h"
#include "spdlog/spdlog.h"
#include "tensor/tensor.h"

namespace syncopate::client {

tensor::TensorMap ToTensorMap(const rpc::StagedPush& push) {
  tensor::TensorMap model;
  for (const tensor::TensorSpec& spec : push.tensors) {
    model[spec.name].resize(spec.NumElements());
  }
  for (const rpc::StagedChunk& chunk : push.chunks) {
    chunk.ScaledCopyTo(model[push.tensors[chunk.tensor_index].name].data(), 1.0f);
  }
  return model;
}

void TransferMeter::Record(uint64_t peer, uint64_t bytes, absl::Time start, absl::Time end) {
  absl::MutexLock lock(&mu_);
  bytes_ += bytes;
  ++transfers_;
  if (!first_ || start < *first_) first_ = start;
  if (end > last_) last_ = end;
  if (streams_.size() < static_cast<size_t>(kMaxStreams)) {
    streams_.push_back({peer, bytes, start, end});
  }
}

TransferTotals TransferMeter::Take() {
  absl::MutexLock lock(&mu_);
  const double seconds = first_ ? absl::ToDoubleSeconds(last_ - *first_) : 0.0;
  TransferTotals out{static_cast<double>(bytes_), seconds, transfers_, {}};
  for (const Stream& s : streams_) {
    out.streams.push_back({s.peer, static_cast<double>(s.bytes),
                           absl::ToDoubleSeconds(s.start - *first_),
                           absl::ToDoubleSeconds(s.end - s.start)});
  }
  bytes_ = 0;
  transfers_ = 0;
  first_.reset();
  streams_.clear();
  return out;
}

void ExchangeInbox::NamePeers(const v1::PeerExchange& exchange) {
  absl::MutexLock lock(&mu_);
  for (const auto* peers : {&exchange.send_to(), &exchange.receive_from()}) {
    for (const v1::PeerRef& peer : *peers) {
      if (!peer.name().empty()) names_[peer.trainer_id()] = peer.name();
    }
  }
  DropDisallowed();
}

void ExchangeInbox::PlanRound(const v1::PeerExchange& exchange) {
  NamePeers(exchange);
  absl::MutexLock lock(&mu_);
  if (exchange.round() <= done_round_) return;
  std::set<uint64_t>& senders = plans_[exchange.round()];
  for (const v1::PeerRef& peer : exchange.receive_from()) senders.insert(peer.trainer_id());
  DropDisallowed();
}

void ExchangeInbox::DropDisallowed() {
  // What arrived under a name now known to be another's, or from a trainer the round's plan does
  // not name, goes at once: it must not hold the real sender's places (its own rounds, the
  // per-sender limit).
  for (auto& [round, arrivals] : rounds_) {
    for (auto it = arrivals.begin(); it != arrivals.end();) {
      if (!Planned(round, it->first)) {
        spdlog::warn("dropped trainer {}'s model of round {}: the round's plan names it no sender",
                     it->first, round);
      } else if (FromNamedSender(it->first, it->second)) {
        ++it;
        continue;
      }
      if (--pending_by_sender_[it->first] == 0) pending_by_sender_.erase(it->first);
      --pending_;
      it = arrivals.erase(it);
    }
  }
}

bool ExchangeInbox::Planned(int64_t round, uint64_t sender) const {
  auto plan = plans_.find(round);
  return plan == plans_.end() || plan->second.count(sender) > 0;
}

std::optional<std::string> ExchangeInbox::NameOf(uint64_t sender) {
  absl::MutexLock lock(&mu_);
  auto name = names_.find(sender);
  if (name == names_.end()) return std::nullopt;
  return name->second;
}

bool ExchangeInbox::FromNamedSender(uint64_t sender, const Arrival& arrival) const {
  if (arrival.caller.empty()) return true;
  auto name = names_.find(sender);
  if (name == names_.end() || name->second == arrival.caller) return true;
  spdlog::warn("dropped a model sent as trainer {} ({}) by {}", sender, rpc::Quoted(name->second),
               rpc::Quoted(arrival.caller));
  return false;
}

void ExchangeInbox::SetIncarnation(uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  incarnation_ = incarnation;
}

std::optional<PeerModel> ExchangeInbox::Take(uint64_t sender, Arrival& arrival) {
  if (!FromNamedSender(sender, arrival)) return std::nullopt;
  const uint64_t addressed = arrival.ledger.receiver_incarnation;
  if (addressed != 0 && addressed != incarnation_) {
    spdlog::warn("dropped trainer {}'s model for incarnation {} of this trainer, which is {}",
                 sender, addressed, incarnation_);
    return std::nullopt;
  }
  return PeerModel{std::move(arrival.model.model),
                   Credit(sender, arrival.model.mass, arrival.ledger)};
}

double ExchangeInbox::Credit(uint64_t sender, double share, const LedgerTotal& ledger) {
  if (ledger.ledger == 0) return share;
  auto [it, first] = credited_.try_emplace({sender, ledger.ledger}, ledger.sent_total);
  if (first) return ledger.sent_total;  // every share this incarnation was sent
  const double credit = std::max(0.0, ledger.sent_total - it->second);
  it->second = std::max(it->second, ledger.sent_total);
  return credit;
}

absl::Status ExchangeInbox::Deposit(int64_t round, uint64_t sender, tensor::TensorMap model,
                                    const std::string& caller, double mass, LedgerTotal ledger) {
  absl::MutexLock lock(&mu_);
  if (ledger.receiver_incarnation != 0 && incarnation_ != 0 &&
      ledger.receiver_incarnation != incarnation_) {
    return absl::FailedPreconditionError(
        absl::StrCat("a model for incarnation ", ledger.receiver_incarnation,
                     " of this trainer, which is incarnation ", incarnation_));
  }
  if (round <= done_round_) {
    return absl::FailedPreconditionError(
        absl::StrCat("round ", round, " arrived after its exchange ended"));
  }
  if (!Planned(round, sender)) {
    return absl::PermissionDeniedError(
        absl::StrCat("Exchange refused: the coordinator did not name trainer ", sender,
                     " as a sender of round ", round, " to this trainer"));
  }
  if (auto it = rounds_.find(round); it != rounds_.end() && it->second.count(sender) > 0) {
    Arrival& earlier = it->second.at(sender);
    // A model taken under the sender's id from another caller before its name was known gives way
    // to the one from the named sender.
    auto name = names_.find(sender);
    if (name != names_.end() && caller == name->second && earlier.caller != caller) {
      earlier = Arrival{{std::move(model), mass}, caller, ledger};
      return absl::OkStatus();
    }
    return absl::AlreadyExistsError(
        absl::StrCat("trainer ", sender, " already sent its model for round ", round));
  }
  auto waiting = pending_by_sender_.find(sender);
  const int from_sender = waiting == pending_by_sender_.end() ? 0 : waiting->second;
  if (from_sender >= max_per_sender_ || pending_ >= max_pending_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "inbox full: trainer ", sender, " has ", from_sender, " models waiting (at most ",
        max_per_sender_, "), ", pending_, " in all (at most ", max_pending_, ")"));
  }
  rounds_[round].emplace(sender, Arrival{{std::move(model), mass}, caller, ledger});
  ++pending_by_sender_[sender];
  ++pending_;
  return absl::OkStatus();
}

std::map<uint64_t, PeerModel> ExchangeInbox::Collect(int64_t round,
                                                     const std::vector<uint64_t>& senders,
                                                     absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  collecting_ = round;
  auto all_arrived = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    auto it = rounds_.find(round);
    for (uint64_t s : senders) {
      const bool arrived = it != rounds_.end() && it->second.count(s) > 0;
      auto gone = gone_.find(s);
      if (!arrived && (gone == gone_.end() || gone->second < round)) return false;
    }
    return true;
  };
  ++waiting_;
  clock_.AwaitUntil(mu_, absl::Condition(&all_arrived), deadline);
  --waiting_;
  collecting_.reset();
  std::map<uint64_t, PeerModel> out;
  if (auto it = rounds_.find(round); it != rounds_.end()) {
    for (uint64_t s : senders) {
      auto m = it->second.find(s);
      if (m == it->second.end()) continue;
      if (std::optional<PeerModel> taken = Take(s, m->second)) out.emplace(s, *std::move(taken));
    }
  }
  const auto done = rounds_.upper_bound(round);
  for (auto it = rounds_.begin(); it != done; ++it) {
    for (const auto& [sender, arrival] : it->second) {
      if (--pending_by_sender_[sender] == 0) pending_by_sender_.erase(sender);
      --pending_;
    }
  }
  rounds_.erase(rounds_.begin(), done);
  plans_.erase(plans_.begin(), plans_.upper_bound(round));
  done_round_ = std::max(done_round_, round);
  return out;
}

void ExchangeInbox::MarkGone(uint64_t sender) {
  absl::MutexLock lock(&mu_);
  gone_[sender] = collecting_.value_or(done_round_ + 1);
}

std::map<uint64_t, PeerModel> ExchangeInbox::TakeLatest(absl::Time wait_until) {
  absl::MutexLock lock(&mu_);
  auto arrived = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return pending_ > 0; };
  const int waits = wait_until > absl::InfinitePast() ? 1 : 0;  // the default takes, never waits
  waiting_ += waits;
  clock_.AwaitUntil(mu_, absl::Condition(&arrived), wait_until);
  waiting_ -= waits;
  std::map<uint64_t, PeerModel> latest;
  for (auto& [round, models] : rounds_) {  // ascending rounds: newer models replace older ones
    for (auto& [sender, arrival] : models) {
      if (std::optional<PeerModel> taken = Take(sender, arrival)) {
        AddNewer(latest, sender, *std::move(taken));
      }
    }
  }
  rounds_.clear();
  pending_by_sender_.clear();
  pending_ = 0;
  return latest;
}

bool ExchangeInbox::AwaitWaiter(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto waiting = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return waiting_ > 0; };
  return mu_.AwaitWithTimeout(absl::Condition(&waiting), timeout);
}

void AddNewer(std::map<uint64_t, PeerModel>& models, uint64_t sender, PeerModel model) {
  auto [it, first] = models.try_emplace(sender, std::move(model));
  if (first) return;
  it->second.model = std::move(model.model);
  it->second.mass += model.mass;
}

rpc::SpecLookup ShapeLookup(const tensor::TensorMap& model) {
  std::map<std::string, tensor::TensorSpec> specs;
  for (const auto& [name, values] : model) {
    specs[name] = tensor::TensorSpec{name, {static_cast<int64_t>(values.size())}};
  }
  return [specs = std::move(specs)](const std::string& name) -> std::optional<tensor::TensorSpec> {
    auto it = specs.find(name);
    if (it == specs.end()) return std::nullopt;
    return it->second;
  };
}

PeerService::PeerService(ExchangeInbox& inbox, rpc::SpecLookup lookup, base::TokenBucket* ingress,
                         TransferMeter& received, rpc::Authorizer authorizer,
                         rpc::StreamWatchdog* watchdog)
    : inbox_(inbox),
      lookup_(std::move(lookup)),
      ingress_(ingress),
      received_(received),
      authorizer_(std::move(authorizer)),
      watchdog_(watchdog) {}

absl::Status PeerService::MaySend(const std::optional<rpc::Identity>& caller, uint64_t sender) {
  std::optional<std::string> name = inbox_.NameOf(sender);
  if (!name) return absl::OkStatus();
  return authorizer_.RequireName(caller, *name, "Exchange",
                                 absl::StrCat("a model as trainer ", sender));
}

absl::Status PeerService::Deliver(const std::optional<rpc::Identity>& caller, absl::Time start,
                                  absl::StatusOr<rpc::StagedPush> push) {
  if (!push.ok()) return push.status();
  if (push->header.codec() == v1::CODEC_TOPK) {
    return absl::InvalidArgumentError(
        "a peer's model carries every value (float32, bf16 or fp16), not top-k");
  }
  const uint64_t sender = push->header.trainer_id();
  RETURN_IF_ERROR(MaySend(caller, sender));
  const double mass = push->header.weight();
  const LedgerTotal ledger{push->header.mass_ledger(), push->header.mass_sent_total(),
                           push->header.receiver_incarnation()};
  for (double m : {mass, ledger.sent_total}) {
    if (!(std::isfinite(m) && m >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("a peer model's mass must be finite and not negative, got ", m));
    }
  }
  received_.Record(sender, push->payload_bytes, start, absl::Now());
  absl::Status deposited = inbox_.Deposit(push->header.clock(), sender, ToTensorMap(*push),
                                          caller ? caller->name : "", mass, ledger);
  if (absl::IsPermissionDenied(deposited)) {
    deposited = authorizer_.Refuse("Exchange", std::move(deposited));
  }
  return deposited;
}

absl::Duration PeerService::Pace(size_t payload) {
  return ingress_ ? ingress_->Take(payload) : absl::ZeroDuration();
}

grpc::ServerReadReactor<grpc::ByteBuffer>* PeerService::Exchange(grpc::CallbackServerContext* ctx,
                                                                 grpc::ByteBuffer* response) {
  absl::StatusOr<std::optional<rpc::Identity>> caller =
      authorizer_.Require(*ctx, "Exchange", {rpc::Role::kTrainer});
  if (!caller.ok()) return new rpc::RefusedPush(rpc::ToGrpcStatus(caller.status()));
  const absl::Time start = absl::Now();
  return new rpc::PushReactor(
      lookup_,
      [this, start, caller = *std::move(caller)](absl::StatusOr<rpc::StagedPush> push,
                                                 grpc::ByteBuffer* response) {
        const absl::Status delivered = Deliver(caller, start, std::move(push));
        if (delivered.ok()) *response = rpc::EncodeMessage(v1::ExchangeReply());
        return rpc::ToGrpcStatus(delivered);
      },
      response, /*open=*/nullptr, [this](size_t payload) { return Pace(payload); }, watchdog_, ctx);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* PeerService::Transfer(
    grpc::CallbackServerContext* ctx) {
  static_assert(v1::PeerTransferRequest::kModelEndFieldNumber == rpc::PushStreamReactor::kEndField);
  absl::StatusOr<std::optional<rpc::Identity>> caller =
      authorizer_.Require(*ctx, "Exchange", {rpc::Role::kTrainer});
  if (!caller.ok()) return new rpc::RefusedPushStream(rpc::ToGrpcStatus(caller.status()));
  return new rpc::PushStreamReactor(
      lookup_,
      [this, caller = *caller](const v1::PushHeader& header) {
        return MaySend(caller, header.trainer_id());
      },
      [this, caller = *caller](absl::StatusOr<rpc::StagedPush> push,
                               absl::Time start) -> absl::StatusOr<grpc::ByteBuffer> {
        RETURN_IF_ERROR(Deliver(caller, start, std::move(push)));
        return rpc::EncodeMessage(v1::ExchangeReply());
      },
      [this](size_t payload) { return Pace(payload); }, watchdog_, ctx);
}

PeerSender::PeerSender(base::TokenBucket* egress, TransferMeter& sent, rpc::Credentials credentials,
                       uint32_t chunk_bytes, const base::Clock& clock)
    : egress_(egress),
      sent_(sent),
      credentials_(std::move(credentials)),
      chunk_bytes_(chunk_bytes),
      clock_(clock),
      ledger_([] {
        std::random_device device;
        const uint64_t ledger = (uint64_t{device()} << 32) | device();
        return ledger != 0 ? ledger : 1;
      }()) {}

PeerSender::PeerChannel& PeerSender::ChannelTo(const std::string& address) {
  PeerChannel& peer = channels_[address];
  if (!peer.channel) {
    peer.channel = rpc::MakeChannel(address, credentials_, rpc::Role::kTrainer);
    peer.exchange =
        std::make_unique<rpc::RawClientStream>("/syncopate.v1.Peer/Exchange", peer.channel);
  }
  return peer;
}

std::unique_ptr<TransferStream> PeerSender::TakeStream(const std::string& address) {
  absl::MutexLock lock(&mu_);
  PeerChannel& peer = ChannelTo(address);
  if (peer.idle) return std::move(peer.idle);
  return std::make_unique<TransferStream>(peer.channel, "/syncopate.v1.Peer/Transfer",
                                          absl::StrCat("peer ", address));
}

void PeerSender::ReturnStream(const std::string& address, std::unique_ptr<TransferStream> stream) {
  std::unique_ptr<TransferStream> spare;  // cancelled outside the lock
  absl::MutexLock lock(&mu_);
  PeerChannel& peer = ChannelTo(address);
  if (peer.idle) {
    spare = std::move(stream);
  } else {
    peer.idle = std::move(stream);
  }
}

PeerSender::Booked PeerSender::Book(const v1::PeerRef& receiver, double share,
                                    bool unless_on_its_way) {
  const std::pair<uint64_t, uint64_t> key{receiver.trainer_id(), receiver.incarnation()};
  absl::MutexLock lock(&mu_);
  double& sent = sent_total_[key];
  auto confirmed = confirmed_total_.find(key);
  const bool on_its_way =
      sent > 0 && (confirmed == confirmed_total_.end() || confirmed->second < sent);
  Booked booked{static_cast<float>(share), 0};
  if (unless_on_its_way && on_its_way) booked.share = 0;
  if (std::isfinite(booked.share) && booked.share > 0) sent += booked.share;
  booked.sent_total = sent;
  return booked;
}

absl::Status PeerSender::SendOne(const v1::PeerRef& peer, uint64_t sender, int64_t round,
                                 const tensor::SharedTensorMap& model, double mass,
                                 absl::Time deadline, TransferCancel* cancel) {
  return SendBooked(peer, sender, round, model, Book(peer, mass), deadline, cancel);
}

bool PeerSender::AwaitIdleUpload(size_t bytes, TransferCancel* cancel, absl::Time deadline) {
  auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return required_running_ == 0; };
  for (;;) {
    if (cancel != nullptr && cancel->cancelled()) return false;
    const absl::Time now = clock_.Now();
    if (now >= deadline) return false;
    const absl::Duration poll = std::min(kIdlePoll, deadline - now);
    if (egress_ == nullptr) {
      absl::MutexLock lock(&mu_);
      if (clock_.AwaitUntil(mu_, absl::Condition(&idle), now + poll)) return true;
      continue;
    }
    const absl::Duration wait = egress_->TakeIdle(bytes);
    if (wait == absl::ZeroDuration()) return true;
    clock_.SleepFor(std::min(wait, poll));
  }
}

absl::Status PeerSender::SendBooked(const v1::PeerRef& peer, uint64_t sender, int64_t round,
                                    const tensor::SharedTensorMap& model, const Booked& booked,
                                    absl::Time deadline, TransferCancel* cancel) {
  if (!peer.low_priority()) CountRequired(1);
  return Send(peer, sender, round, model, booked, deadline, cancel);
}

void PeerSender::CountRequired(int transfers) {
  absl::MutexLock lock(&mu_);
  required_running_ += transfers;
}

absl::Status PeerSender::Send(const v1::PeerRef& peer, uint64_t sender, int64_t round,
                              const tensor::SharedTensorMap& model, const Booked& booked,
                              absl::Time deadline, TransferCancel* cancel) {
  const bool low = peer.low_priority();
  struct Uncount {
    PeerSender* sender;  // null: nothing to uncount
    ~Uncount() {
      if (sender != nullptr) sender->CountRequired(-1);
    }
  } uncount{low ? nullptr : this};
  // Registered while it runs, so that PeerLeft can cancel it.
  TransferCancel own_cancel;
  if (cancel == nullptr) cancel = &own_cancel;
  struct Running {
    PeerSender* sender;
    std::multimap<uint64_t, TransferCancel*>::iterator it;
    ~Running() {
      absl::MutexLock lock(&sender->mu_);
      sender->running_.erase(it);
    }
  } running{this, [&] {
              absl::MutexLock lock(&mu_);
              return running_.emplace(peer.trainer_id(), cancel);
            }()};
  auto failed = [&](const absl::Status& s) {
    return absl::Status(s.code(),
                        absl::StrCat("to trainer ", peer.trainer_id(), ": ", s.message()));
  };
  const uint32_t chunk_bytes = low ? std::min(chunk_bytes_, kLowPriorityChunkBytes) : chunk_bytes_;
  // A low-priority transfer waits for an idle upload chunk by chunk; the bytes it was given ahead
  // of the chunks that use them are `credit`. Its stream opens once the first chunk's worth is
  // given, so that it is not held open while it waits to start.
  size_t credit = 0;
  absl::Status stopped;  // why a low-priority transfer stopped waiting
  auto await_idle = [&](size_t bytes) {
    if (credit >= bytes) {
      credit -= bytes;
      return true;
    }
    if (AwaitIdleUpload(bytes - credit, cancel, deadline)) {
      credit = 0;
      return true;
    }
    stopped = cancel->cancelled()
                  ? absl::CancelledError("a low-priority transfer was cancelled")
                  : absl::DeadlineExceededError("no idle upload for a low-priority transfer");
    return false;
  };
  // Timed from here, the wait for the first chunk included: a stream's bytes over its time must
  // not exceed what the link carried (the coordinator's samples are lower bounds).
  const absl::Time start = clock_.Now();
  if (low) {
    if (!await_idle(chunk_bytes)) return failed(stopped);
    credit = chunk_bytes;
  }
  v1::PushMessage message;
  v1::PushHeader* header = message.mutable_header();
  header->set_trainer_id(sender);
  header->set_clock(round);
  header->set_weight(static_cast<float>(booked.share));
  header->set_mass_ledger(ledger_);
  header->set_mass_sent_total(booked.sent_total);
  header->set_receiver_incarnation(peer.incarnation());
  const v1::Codec codec = codec_.load(std::memory_order_relaxed);
  header->set_codec(codec);
  const TensorEntries entries = AllEntries(*model);
  AddSpecs(entries, header);
  const grpc::ByteBuffer header_bytes = rpc::EncodeMessage(message);
  uint64_t bytes = 0;
  const TransferStream::WriteChunks write_chunks =
      [&](TransferStream::Writer& writer) -> std::optional<absl::Status> {
    const bool written = WriteChunks(
        writer, model, entries, chunk_bytes,
        [&](size_t chunk) {
          if (cancel->cancelled()) return false;
          if (low) return await_idle(chunk);
          base::PaceThrough(egress_, chunk);
          return true;
        },
        &bytes, codec);
    // Stopped here (not a half-close: the receiver would see a cut model), or the stream broke.
    if (!stopped.ok()) return stopped;
    if (cancel->cancelled()) {
      return absl::CancelledError("the transfer was cancelled");
    }
    if (!written) return std::nullopt;
    return absl::OkStatus();
  };
  const bool by_call = transport_.load(std::memory_order_relaxed) == Transport::kCall;
  base::Backoff setup_backoff(kSetupBackoff);
  for (bool retried = false;; retried = true) {
    bool header_sent = false;
    bool sent_again = false;  // by the stream, on a new one
    absl::Status status;
    if (by_call) {
      status =
          SendByCall(peer.address(), header_bytes, write_chunks, deadline, cancel, &header_sent);
    } else {
      v1::PeerTransferRequest end;
      end.mutable_model_end();
      TransferStream::PushOptions options;
      options.cork_header = false;  // its write says whether the stream was set up
      options.cancel = cancel;
      options.header_sent = &header_sent;
      options.sent_again = &sent_again;
      std::unique_ptr<TransferStream> stream = TakeStream(peer.address());
      status = stream->Push(
          header_bytes, write_chunks, rpc::EncodeMessage(end),
          std::max(deadline - clock_.Now(), absl::ZeroDuration()),
          [](grpc::ByteBuffer& reply) {
            v1::ExchangeReply parsed;
            if (!grpc::SerializationTraits<v1::ExchangeReply>::Deserialize(&reply, &parsed).ok()) {
              return absl::DataLossError("the peer answered a model with something else");
            }
            return absl::OkStatus();
          },
          options);
      ReturnStream(peer.address(), std::move(stream));
    }
    // A model sent again after a failure the peer took it through (its reply was lost) is
    // refused as a repeat of its round: it arrived.
    if (status.ok() || ((retried || sent_again) && absl::IsAlreadyExists(status))) {
      sent_.Record(peer.trainer_id(), bytes, start, clock_.Now());
      absl::MutexLock lock(&mu_);
      gone_.erase(peer.trainer_id());
      double& confirmed = confirmed_total_[{peer.trainer_id(), peer.incarnation()}];
      confirmed = std::max(confirmed, booked.sent_total);
      return absl::OkStatus();
    }
    // A send that broke before its header went out failed at connection set-up (refused, its
    // TLS handshake cut): nothing reached the peer, so it is tried again, with backoff, while the
    // deadline leaves time. Anything else is the transfer's outcome.
    // A peer the coordinator said left is not waited for.
    const absl::Duration wait = setup_backoff.Next();
    if (header_sent || !absl::IsUnavailable(status) || cancel->cancelled() ||
        clock_.Now() + wait >= deadline || Gone(peer.trainer_id())) {
      return failed(status);
    }
    setup_retries_.fetch_add(1, std::memory_order_relaxed);
    clock_.SleepFor(wait);
  }
}

absl::Status PeerSender::SendByCall(const std::string& address, const grpc::ByteBuffer& header,
                                    const TransferStream::WriteChunks& write_chunks,
                                    absl::Time deadline, TransferCancel* cancel,
                                    bool* header_sent) {
  grpc::ClientContext ctx;
  // gRPC's deadlines are wall-clock times.
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + (deadline - clock_.Now())));
  if (cancel != nullptr) cancel->Attach(&ctx);
  // Detaches before `ctx` goes away, whichever way this attempt ends.
  struct Detach {
    TransferCancel* cancel;
    ~Detach() {
      if (cancel != nullptr) cancel->Attach(nullptr);
    }
  } detach{cancel};
  v1::ExchangeReply reply;
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer = [&] {
    absl::MutexLock lock(&mu_);
    return ChannelTo(address).exchange->Start(&ctx, &reply);
  }();
  *header_sent = writer->Write(header);
  if (*header_sent) {
    const std::optional<absl::Status> written = write_chunks(*writer);
    if (written && !written->ok()) {
      ctx.TryCancel();  // not a half-close: the receiver would see a cut model
      writer->Finish();
      return *written;
    }
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (status.ok()) return absl::OkStatus();
  if (cancel != nullptr && cancel->cancelled()) {
    return absl::CancelledError("the transfer was cancelled");
  }
  const absl::Status s = rpc::FromGrpcStatus(status);
  return absl::Status(s.code(), absl::StrCat("peer ", address, ": ", s.message()));
}

void PeerSender::PeerLeft(uint64_t trainer_id) {
  absl::MutexLock lock(&mu_);
  gone_.insert(trainer_id);
  auto [first, last] = running_.equal_range(trainer_id);
  for (auto it = first; it != last; ++it) it->second->Cancel();
}

bool PeerSender::Gone(uint64_t trainer_id) {
  absl::MutexLock lock(&mu_);
  return gone_.count(trainer_id) > 0;
}

std::vector<absl::Status> PeerSender::SendToAll(const std::vector<v1::PeerRef>& peers,
                                                uint64_t sender, int64_t round,
                                                const tensor::SharedTensorMap& model, double mass,
                                                absl::Time deadline) {
  std::vector<absl::Status> results(peers.size());
  // Counted before any transfer starts, so that (without an egress rate) no low-priority chunk
  // goes ahead of them.
  CountRequired(static_cast<int>(std::count_if(
      peers.begin(), peers.end(), [](const v1::PeerRef& p) { return !p.low_priority(); })));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < peers.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = Send(peers[i], sender, round, model, Book(peers[i], mass), deadline, nullptr);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

double PushSumShare(double mass, size_t receivers) {
  return static_cast<float>(mass / static_cast<double>(receivers + 1));
}

absl::StatusOr<double> MixInto(tensor::TensorMap& own, double own_mass,
                               const std::map<uint64_t, PeerModel>& received) {
  if (!(std::isfinite(own_mass) && own_mass >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("this trainer's mass is ", own_mass));
  }
  double total = own_mass;
  for (const auto& [sender, peer] : received) {
    if (!(std::isfinite(peer.mass) && peer.mass >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("trainer ", sender, "'s model carries mass ", peer.mass));
    }
    for (const auto& [name, values] : own) {
      auto it = peer.model.find(name);
      if (it == peer.model.end() || it->second.size() != values.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("trainer ", sender, "'s model does not match tensor '", name, "'"));
      }
    }
    total += peer.mass;
  }
  if (total == 0) return 0.0;  // nobody's model weighs anything yet: keep this one
  const float own_weight = static_cast<float>(own_mass / total);
  for (auto& [name, values] : own) {
    for (float& v : values) v *= own_weight;
    for (const auto& [sender, peer] : received) {
      const float weight = static_cast<float>(peer.mass / total);
      const std::vector<float>& other = peer.model.at(name);
      tensor::ScaledAdd(values.data(), tensor::UnalignedFloats::Of(other), weight);
    }
  }
  return total;
}

}  // namespace syncopate::client
