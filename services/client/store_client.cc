#include "client/store_client.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/backoff.h"
#include "base/status_macros.h"
#include "client/chunk_writer.h"
#include "client/pull_decoder.h"
#include "rpc/chunk_frames.h"
#include "rpc/grpc_util.h"
#include "spdlog/spdlog.h"

namespace syncopate::client {

namespace {

bool Transient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsResourceExhausted(status);
}

}  // namespace

StoreClient::StoreClient(std::vector<std::string> addresses, const rpc::Credentials& credentials,
                         absl::Duration timeout, uint32_t chunk_bytes, LinkLimits limits,
                         absl::Duration retry_for, absl::Duration leave_within)
    : addresses_(std::move(addresses)),
      timeout_(timeout),
      chunk_bytes_(chunk_bytes),
      limits_(limits),
      retry_for_(retry_for),
      leave_within_(leave_within) {
  for (const std::string& address : addresses_) {
    std::shared_ptr<grpc::Channel> channel =
        rpc::MakeChannel(address, credentials, rpc::Role::kStore);
    stubs_.push_back(v1::ParameterStore::NewStub(channel));
    initializes_.emplace_back("/syncopate.v1.ParameterStore/Initialize", channel);
    pushes_.emplace_back("/syncopate.v1.ParameterStore/Push", channel);
    pulls_.emplace_back("/syncopate.v1.ParameterStore/Pull", channel);
    streams_.push_back(std::make_unique<TransferStream>(
        channel, "/syncopate.v1.ParameterStore/Transfer", absl::StrCat("store ", address)));
  }
  shard_incarnation_.assign(stubs_.size(), 0);
  unsaved_.resize(stubs_.size());
}

absl::Status StoreClient::ForEachShard(const std::string& what,
                                       const std::function<absl::Status(size_t)>& fn,
                                       std::optional<absl::Time> give_up_at) {
  // The interrupt is asked on the calling thread only (a language binding checks its signals
  // there); the shards' threads read what it said.
  const bool interruptible = !give_up_at && interrupted_ != nullptr;
  std::atomic<bool> stopping{false};
  auto with_retries = [&](size_t shard, bool on_calling_thread) {
    const absl::Time start = absl::Now();
    const absl::Time stop = give_up_at.value_or(start + retry_for_);
    base::Backoff backoff;
    absl::Status status = fn(shard);
    while (Transient(status) && absl::Now() < stop) {
      if (interruptible && on_calling_thread && interrupted_()) stopping = true;
      if (stopping) {
        return GivenUpForStop(absl::StrCat(what, " on store ", addresses_[shard],
                                           " given up: the trainer is stopping; ",
                                           status.message()));
      }
      if (backoff.failures() == 0) {
        spdlog::warn("{} on store {} failed, retrying with backoff for up to {}: {}", what,
                     addresses_[shard],
                     absl::FormatDuration(absl::Trunc(stop - start, absl::Milliseconds(1))),
                     status.ToString());
      }
      absl::SleepFor(std::min(backoff.Next(), stop - absl::Now()));
      status = fn(shard);
    }
    if (backoff.failures() > 0 && status.ok()) {
      spdlog::info("{} on store {} went through after {} and {} retries", what, addresses_[shard],
                   absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1))),
                   backoff.failures());
    }
    return status;
  };
  if (stubs_.size() == 1) return with_retries(0, true);
  std::vector<absl::Status> results(stubs_.size());
  absl::Mutex mu;
  size_t running = stubs_.size();
  std::vector<std::thread> threads;
  for (size_t s = 0; s < stubs_.size(); ++s) {
    threads.emplace_back([&, s] {
      results[s] = with_retries(s, false);
      absl::MutexLock lock(&mu);
      --running;
    });
  }
  // The calling thread asks the interrupt every 200 ms until every shard is done.
  const auto all_done = [&running] { return running == 0; };  // with mu held
  while (true) {
    {
      absl::MutexLock lock(&mu);
      if (mu.AwaitWithTimeout(absl::Condition(&all_done), absl::Milliseconds(200))) break;
    }
    if (interruptible && interrupted_()) stopping = true;
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::unique_ptr<grpc::ClientContext> StoreClient::Context(absl::Time give_up_at) const {
  return rpc::ContextWithTimeout(
      std::max(std::min(timeout_, give_up_at - absl::Now()), absl::Milliseconds(1)));
}

absl::Status StoreClient::SendTo(size_t shard, bool initialize, const v1::PushHeader& header,
                                 const tensor::SharedTensorMap& model, const TensorEntries& tensors,
                                 v1::PushReply* reply, absl::Time give_up_at, uint64_t* written) {
  v1::PushMessage first;
  *first.mutable_header() = header;
  if (!initialize) first.mutable_header()->set_shard_incarnation(shard_incarnation_[shard]);
  AddSpecs(tensors, first.mutable_header());
  auto write_chunks = [&](grpc::internal::WriterInterface<grpc::ByteBuffer>& writer) {
    if (written != nullptr) *written = 0;  // the last attempt's bytes
    return WriteChunks(
        writer, model, tensors, chunk_bytes_,
        [&](size_t bytes) {
          base::PaceThrough(limits_.egress, bytes);
          return true;
        },
        written, header.codec());
  };
  if (!initialize && transport_ == Transport::kStream) {
    return PushOnStream(
        *streams_[shard], rpc::EncodeMessage(first), write_chunks,
        std::max(std::min(timeout_, give_up_at - absl::Now()), absl::Milliseconds(1)), reply);
  }
  auto ctx = Context(give_up_at);
  auto writer = (initialize ? initializes_ : pushes_)[shard].Start(ctx.get(), reply);
  if (writer->Write(rpc::EncodeMessage(first))) write_chunks(*writer);
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) {
    absl::Status s = rpc::FromGrpcStatus(status);
    return absl::Status(s.code(), absl::StrCat("store ", addresses_[shard], ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status StoreClient::Initialize(const v1::PushHeader& header,
                                     const tensor::TensorMap& values) {
  const tensor::SharedTensorMap model = tensor::Share(values);  // once per trainer
  std::vector<TensorEntries> by_shard(stubs_.size());
  for (const auto& entry : *model) {
    by_shard[tensor::ShardOf(entry.first, stubs_.size())].push_back(&entry);
  }
  return ForEachShard("initialize", [&](size_t s) {
    if (by_shard[s].empty()) return absl::OkStatus();
    v1::PushReply reply;
    RETURN_IF_ERROR(SendTo(s, true, header, model, by_shard[s], &reply));
    if (shard_incarnation_[s] == 0) shard_incarnation_[s] = reply.incarnation();
    return absl::OkStatus();
  });
}

absl::Status StoreClient::LearnOfRestart(size_t shard, absl::Time give_up_at) {
  v1::Schema schema;
  auto ctx = Context(give_up_at);
  grpc::Status asked = stubs_[shard]->GetSchema(ctx.get(), v1::GetSchemaRequest(), &schema);
  if (!asked.ok()) {
    const absl::Status s = rpc::FromGrpcStatus(asked);
    // A shard that does not answer in time is as good as down.
    return absl::Status(absl::IsDeadlineExceeded(s) ? absl::StatusCode::kUnavailable : s.code(),
                        absl::StrCat("store ", addresses_[shard],
                                     ": asking it which process it is: ", s.message()));
  }
  if (schema.incarnation() != shard_incarnation_[shard]) {
    UnsavedPushes& unsaved = unsaved_[shard];
    unsaved.LoseAll();
    shard_incarnation_[shard] = schema.incarnation();
    spdlog::warn("store {} restarted: re-sending the {} push sum(s) it had not checkpointed",
                 addresses_[shard], unsaved.to_resend());
  }
  return absl::OkStatus();
}

absl::Status StoreClient::Took(size_t shard, const v1::PushHeader& header,
                               const tensor::TensorMap& delta, const TensorEntries& tensors,
                               const absl::Status& sent, const v1::PushReply& reply,
                               absl::Time give_up_at) {
  UnsavedPushes& unsaved = unsaved_[shard];
  if (absl::IsAborted(sent)) {
    // The shard restarted.
    RETURN_IF_ERROR(LearnOfRestart(shard, give_up_at));
    return absl::UnavailableError(absl::StrCat("store ", addresses_[shard], " restarted"));
  }
  RETURN_IF_ERROR(sent);
  shard_incarnation_[shard] = reply.incarnation();
  // A duplicate whose original epoch the shard knows is kept too (its first reply was lost).
  if (reply.epoch() >= 0) {
    std::vector<const std::string*> names;
    for (const auto* t : tensors) names.push_back(&t->first);
    // Kept at the weight the shard applied (the job's), which a re-send must match; a duplicate's
    // reply has none, and the grant's stands in.
    const float weight = reply.applied_weight() > 0 ? reply.applied_weight() : header.weight();
    const int dropped =
        unsaved.Add(reply.incarnation(), reply.epoch(), header.sequence(), header.clock(), weight,
                    header.apply_mode() == v1::APPLY_MODE_ROUND, delta, names,
                    static_cast<int>(std::max<uint32_t>(1, header.pushes())));
    if (dropped > 0) {
      if (metrics_ != nullptr) metrics_->pushes_unprotected.Increment(dropped);
      spdlog::warn(
          "store {} has not checkpointed for a long time: {} older push(es) are no "
          "longer kept to re-send after a restart",
          addresses_[shard], dropped);
    }
  }
  unsaved.Release(reply.incarnation(), reply.durable_epoch());
  return absl::OkStatus();
}

absl::Status StoreClient::ResendLost(size_t shard, const v1::PushHeader& header,
                                     absl::Time give_up_at) {
  UnsavedPushes& unsaved = unsaved_[shard];
  while (const PushSum* lost = unsaved.NextToResend()) {
    v1::PushHeader h;
    h.set_trainer_id(header.trainer_id());
    h.set_incarnation(header.incarnation());
    h.set_sequence(lost->last_sequence);
    h.set_clock(lost->last_clock);
    h.set_resent(true);
    h.set_pushes(static_cast<uint32_t>(lost->pushes));
    // The sum holds weight x delta: sent as their weighted mean with their total weight, it
    // weighs in a round as they would have (immediate ones take weight 1 and the sum as it is).
    // A copy for the stream to hold: PopResent below drops the sum while gRPC may still hold it.
    tensor::TensorMap delta = lost->sum;
    if (lost->round && lost->weight_sum > 0) {
      h.set_apply_mode(v1::APPLY_MODE_ROUND);
      h.set_weight(static_cast<float>(lost->weight_sum));
      const float scale = static_cast<float>(1.0 / lost->weight_sum);
      for (auto& [name, values] : delta) {
        for (float& v : values) v *= scale;
      }
    } else {
      h.set_apply_mode(v1::APPLY_MODE_IMMEDIATE);
      h.set_weight(1.0f);
    }
    const tensor::SharedTensorMap shared = tensor::Share(std::move(delta));
    const TensorEntries tensors = AllEntries(*shared);
    v1::PushReply reply;
    const absl::Status sent = SendTo(shard, false, h, shared, tensors, &reply, give_up_at);
    // Kept again under the epoch it now went into, until that is checkpointed too. A duplicate
    // was in the checkpoint the shard restored.
    RETURN_IF_ERROR(Took(shard, h, *shared, tensors, sent, reply, give_up_at));
    if (!reply.duplicate()) {
      if (metrics_ != nullptr) metrics_->pushes_resent.Increment(lost->pushes);
      spdlog::info("store {}: re-sent {} push(es) up to sequence {} that its restart lost",
                   addresses_[shard], lost->pushes, lost->last_sequence);
    }
    unsaved.PopResent();
  }
  return absl::OkStatus();
}

absl::Status StoreClient::PushTo(size_t shard, const v1::PushHeader& header,
                                 const TensorEntries& tensors, const tensor::SharedTensorMap& delta,
                                 uint64_t* written) {
  RETURN_IF_ERROR(ResendLost(shard, header));
  *written = 0;
  if (tensors.empty()) return absl::OkStatus();
  v1::PushReply reply;
  const absl::Status sent =
      SendTo(shard, false, header, delta, tensors, &reply, absl::InfiniteFuture(), written);
  return Took(shard, header, *delta, tensors, sent, reply);
}

absl::Status StoreClient::ResendWhatRestartsLost(const v1::PushHeader& identity) {
  const absl::Time give_up_at = absl::Now() + std::min(retry_for_, leave_within_);
  return ForEachShard(
      "re-sending what a restart lost",
      [&](size_t s) {
        const UnsavedPushes& unsaved = unsaved_[s];
        if (unsaved.sums_kept() == 0 && unsaved.to_resend() == 0) return absl::OkStatus();
        RETURN_IF_ERROR(LearnOfRestart(s, give_up_at));
        return ResendLost(s, identity, give_up_at);
      },
      give_up_at);
}

absl::StatusOr<uint64_t> StoreClient::Push(const v1::PushHeader& header,
                                           tensor::SharedTensorMap delta) {
  std::vector<TensorEntries> by_shard(stubs_.size());
  for (const auto& entry : *delta) {
    by_shard[tensor::ShardOf(entry.first, stubs_.size())].push_back(&entry);
  }
  std::vector<uint64_t> written(stubs_.size(), 0);  // one per shard's thread
  absl::Status status = ForEachShard(
      "push", [&](size_t s) { return PushTo(s, header, by_shard[s], delta, &written[s]); });
  if (!status.ok()) return status;
  return std::accumulate(written.begin(), written.end(), uint64_t{0});
}

absl::Status StoreClient::PullFrom(size_t shard, int64_t round, PulledModel* out) {
  v1::PullRequest request;
  if (round < 0) {
    request.set_live(true);
  } else {
    request.set_round(round);
    request.set_newest_if_dropped(true);
  }
  request.set_chunk_bytes(chunk_bytes_);
  PullDecoder decoder;
  auto take = [&](const grpc::ByteBuffer& message) {
    RETURN_IF_ERROR(decoder.Add(message));
    base::PaceThrough(limits_.ingress, decoder.last_payload());
    return absl::OkStatus();
  };
  if (transport_ == Transport::kStream) {
    RETURN_IF_ERROR(streams_[shard]->Pull(request, timeout_, take));
    return decoder.Finish(out);
  }
  auto ctx = rpc::ContextWithTimeout(timeout_);
  auto reader = pulls_[shard].Start(ctx.get(), request);
  grpc::ByteBuffer message;
  absl::Status bad;
  while (bad.ok() && reader->Read(&message)) bad = take(message);
  if (!bad.ok()) {
    ctx->TryCancel();
    reader->Finish();
    return absl::Status(bad.code(), absl::StrCat("store ", addresses_[shard], ": ", bad.message()));
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) {
    absl::Status s = rpc::FromGrpcStatus(status);
    return absl::Status(s.code(), absl::StrCat("store ", addresses_[shard], ": ", s.message()));
  }
  return decoder.Finish(out);
}

absl::StatusOr<std::vector<PulledModel>> StoreClient::PullShards(int64_t round) {
  std::vector<PulledModel> parts(stubs_.size());
  absl::Status status =
      ForEachShard(round < 0 ? "live pull" : absl::StrCat("pull of round ", round), [&](size_t s) {
        absl::Status pulled = PullFrom(s, round, &parts[s]);
        // "Not closed yet" (a round pull's only FAILED_PRECONDITION) is waited out, with
        // backoff, within the retry deadline: another shard already closed this round (the
        // coordinator closes a round on every shard: this one is about to); the shard restarted
        // from a checkpoint older than the round (the coordinator reconciles it and closes the
        // job's rounds again); or the round was granted while it closed (pipelined grants) and
        // this shard does not hold pulls for their rounds (--pull-wait=0s, or an older store).
        if (round >= 0 && absl::IsFailedPrecondition(pulled)) {
          return absl::UnavailableError(pulled.message());
        }
        return pulled;
      });
  if (!status.ok()) return status;
  return parts;
}

absl::StatusOr<PulledModel> StoreClient::Pull(int64_t round) {
  int64_t target = round;
  // Each turn can only move to a newer round that some shard published, so shards that drop
  // rounds faster than a pull completes are the only way to need more than two turns.
  for (int turn = 0; turn < 4; ++turn) {
    ASSIGN_OR_RETURN(std::vector<PulledModel> parts, PullShards(target));
    int64_t newest = target;
    for (const PulledModel& part : parts) newest = std::max(newest, part.round);
    if (newest != target) {
      spdlog::info("round {} is no longer kept by every store shard; pulling round {}", target,
                   newest);
      target = newest;
      continue;
    }
    PulledModel model;
    model.round = target;
    for (PulledModel& part : parts) {
      model.tensors.merge(part.tensors);
      model.checksums.push_back(part.checksums.empty() ? 0 : part.checksums.front());
      model.bytes += part.bytes;
    }
    return model;
  }
  return absl::AbortedError(absl::StrCat("the store shards drop rounds faster than round ", round,
                                         "'s replacement can be pulled (raise --snapshots-kept)"));
}

absl::Status PushOnStream(TransferStream& stream, const grpc::ByteBuffer& header,
                          const std::function<bool(TransferStream::Writer&)>& write_chunks,
                          absl::Duration timeout, v1::PushReply* reply) {
  v1::TransferRequest end;
  end.mutable_push_end();
  return stream.Push(
      header,
      [&](TransferStream::Writer& writer) -> std::optional<absl::Status> {
        if (!write_chunks(writer)) return std::nullopt;
        return absl::OkStatus();
      },
      rpc::EncodeMessage(end), timeout,
      [reply](grpc::ByteBuffer& message) {
        v1::TransferReply parsed;
        if (!grpc::SerializationTraits<v1::TransferReply>::Deserialize(&message, &parsed).ok() ||
            parsed.kind_case() != v1::TransferReply::kPushed) {
          return absl::DataLossError(
              "the store answered a push with something else than its reply");
        }
        *reply = std::move(*parsed.mutable_pushed());
        return absl::OkStatus();
      },
      TransferStream::PushOptions());
}

}  // namespace syncopate::client
