#include "store/parameter_table.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rpc/identity.h"

namespace syncopate::store {

std::optional<tensor::TensorSpec> ParameterTable::Spec(const std::string& name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return std::nullopt;
  return it->second.spec;
}

std::vector<tensor::TensorSpec> ParameterTable::Specs() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<tensor::TensorSpec> specs;
  for (const auto& [name, t] : tensors_) specs.push_back(t.spec);
  return specs;
}

int64_t ParameterTable::live_version() const {
  absl::ReaderMutexLock lock(&mu_);
  return live_version_;
}

int64_t ParameterTable::last_closed_round() const {
  absl::ReaderMutexLock lock(&mu_);
  return last_closed_round_;
}

int64_t ParameterTable::durable_version() const {
  absl::ReaderMutexLock lock(&mu_);
  return DurableVersionLocked();
}

int64_t ParameterTable::DurableVersionLocked() const {
  return live_version_ + membership_changes_ + round_pushes_taken_in_;  // each only grows
}

void ParameterTable::Saved(int64_t epoch) {
  absl::MutexLock lock(&mu_);
  durable_epoch_ = std::max(durable_epoch_, epoch);
}

MembershipResult ParameterTable::SetMembers(const std::vector<TrainerKey>& members, int64_t round,
                                            std::optional<PushRule> rule,
                                            std::optional<v1::JobEnd> job_end) {
  absl::MutexLock lock(&mu_);
  membership_received_ = true;
  rule_ = rule;
  auto bytes = [](const std::optional<v1::JobEnd>& end) {
    return end ? end->SerializeAsString() : std::string();
  };
  if (job_end.has_value() != job_end_.has_value() || bytes(job_end) != bytes(job_end_)) {
    job_end_ = std::move(job_end);
    ++membership_changes_;  // a checkpoint is due
  }
  absl::flat_hash_map<uint64_t, uint64_t> incarnations;
  for (const TrainerKey& m : members) {
    incarnations[m.id] = m.incarnation;
    ever_members_.insert(m.id);
  }
  if (!has_membership_ || incarnations != member_incarnation_) ++membership_changes_;
  has_membership_ = true;
  member_incarnation_ = std::move(incarnations);
  MembershipResult result;
  if (!tensors_.empty() && round > last_closed_round_) {
    result.rounds_skipped = round - last_closed_round_;
    last_closed_round_ = round;
    ++live_version_;
    Publish(MakeSnapshot(round));
  }
  result.last_closed_round = last_closed_round_;
  result.holds_model = !tensors_.empty();
  return result;
}

std::vector<Rename> ParameterTable::NameMembers(
    const std::vector<std::pair<uint64_t, std::string>>& names) {
  absl::MutexLock lock(&mu_);
  std::vector<Rename> renames;
  bool changed = false;
  for (const auto& [id, name] : names) {
    if (name.empty()) continue;
    std::string& known = names_[id];
    if (known == name) continue;
    if (!known.empty()) renames.push_back({id, known, name});
    known = name;
    changed = true;
  }
  if (changed) ++membership_changes_;  // a checkpoint is due
  return renames;
}

absl::Status CheckJobEnd(const v1::JobEnd& job_end) {
  if (job_end.final_round() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a job's final round must be at least 1, got ", job_end.final_round()));
  }
  if (!rpc::IsPrintableText(job_end.reason(), 256)) {
    return absl::InvalidArgumentError("a job's end reason is at most 256 printable characters");
  }
  if (job_end.has_final_test_accuracy() &&
      !(job_end.final_test_accuracy() >= 0 && job_end.final_test_accuracy() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("a final test accuracy must be in [0, 1], got ",
                                                   job_end.final_test_accuracy()));
  }
  return absl::OkStatus();
}

std::string ParameterTable::NameOf(uint64_t trainer_id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = names_.find(trainer_id);
  return it == names_.end() ? std::string() : it->second;
}

std::vector<std::pair<TrainerKey, int64_t>> ParameterTable::Taken() const {
  absl::ReaderMutexLock lock(&mu_);
  return {taken_.begin(), taken_.end()};
}

Roster ParameterTable::Members() const {
  absl::MutexLock lock(&mu_);
  Roster roster;
  roster.has_membership = has_membership_;
  roster.job_end = job_end_;
  for (const auto& [id, incarnation] : member_incarnation_) {
    const TrainerKey key{id, incarnation};
    auto cut = last_cut_.find(key);
    roster.members.push_back({key, cut == last_cut_.end() ? -1 : cut->second});
  }
  std::sort(roster.members.begin(), roster.members.end(),
            [](const RoundCut& a, const RoundCut& b) { return a.trainer < b.trainer; });
  return roster;
}

absl::Status ParameterTable::CheckReconciled() const {
  if (membership_received_) return absl::OkStatus();
  return absl::UnavailableError(
      "this shard has not heard from the coordinator since it started (it is starting or "
      "restarting); try again");
}

absl::Status ParameterTable::CheckMember(const v1::PushHeader& header) const {
  RETURN_IF_ERROR(CheckReconciled());
  if (!ever_members_.contains(header.trainer_id())) {
    return absl::UnauthenticatedError(
        absl::StrCat("unknown trainer ", header.trainer_id(), ": not a member of this job"));
  }
  auto it = member_incarnation_.find(header.trainer_id());
  if (it == member_incarnation_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainer ", header.trainer_id(), " has left or was evicted"));
  }
  if (it->second != header.incarnation()) {
    return absl::FailedPreconditionError(absl::StrCat("trainer ", header.trainer_id(),
                                                      " incarnation ", header.incarnation(),
                                                      " is stale (current ", it->second, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ApplyResult> ParameterTable::Initialize(const rpc::StagedPush& push) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckMember(push.header));
  bool any_new = false;
  for (const tensor::TensorSpec& spec : push.tensors) {
    auto it = tensors_.find(spec.name);
    if (it == tensors_.end()) {
      any_new = true;
    } else if (it->second.spec.shape != spec.shape) {
      return absl::FailedPreconditionError(
          absl::StrCat("tensor '", spec.name, "' exists with a different shape"));
    }
  }
  ApplyResult result;
  if (!any_new) {
    result.already_initialized = true;
    result.live_version = live_version_;
    return result;
  }
  if (last_closed_round_ > 0) {
    return absl::FailedPreconditionError("cannot add tensors after training rounds have closed");
  }
  std::vector<bool> fresh(push.tensors.size());
  for (size_t i = 0; i < push.tensors.size(); ++i) {
    const tensor::TensorSpec& spec = push.tensors[i];
    if (tensors_.count(spec.name) > 0) continue;
    fresh[i] = true;
    TensorBuffers::Buffer values = buffers_.Take(static_cast<size_t>(spec.NumElements()));
    std::fill(values->begin(), values->end(), 0.0f);
    tensors_[spec.name] = Tensor{spec, std::move(values)};
  }
  for (const rpc::StagedChunk& chunk : push.chunks) {
    if (!fresh[chunk.tensor_index]) continue;
    Tensor& t = tensors_[push.tensors[chunk.tensor_index].name];
    chunk.payload.CopyTo(reinterpret_cast<char*>(t.values->data() + chunk.offset));
  }
  model_bound_ = std::max<double>(model_bound_, push.max_magnitude);
  KeepOneModelOfBuffers();
  ++live_version_;
  last_closed_round_ = 0;
  snapshots_.clear();
  Publish(MakeSnapshot(0));
  result.live_version = live_version_;
  return result;
}

absl::Status ParameterTable::Restore(const DurableState& state) {
  if (!state.model || state.model->specs.size() != state.model->values.size() ||
      std::any_of(state.model->values.begin(), state.model->values.end(),
                  [](const auto& values) { return values == nullptr; })) {
    return absl::InvalidArgumentError("a restored model needs values for every tensor");
  }
  const ModelSnapshot& model = *state.model;
  // Every pending push must fit the model and its trainer's clock order: checked before anything
  // is restored.
  std::map<TrainerKey, std::deque<PendingPush>> pending;
  for (const std::shared_ptr<const rpc::StagedPush>& push : state.pending) {
    for (const tensor::TensorSpec& spec : push->tensors) {
      auto held = std::find_if(model.specs.begin(), model.specs.end(),
                               [&](const tensor::TensorSpec& s) { return s.name == spec.name; });
      if (held == model.specs.end() || held->shape != spec.shape) {
        return absl::InvalidArgumentError(absl::StrCat("a pending push names tensor '", spec.name,
                                                       "', which the restored model lacks"));
      }
    }
    const v1::PushHeader& h = push->header;
    std::deque<PendingPush>& queue = pending[{h.trainer_id(), h.incarnation()}];
    if (!queue.empty() && h.clock() < queue.back().clock) {  // re-sent sums may share a clock
      return absl::InvalidArgumentError("pending pushes out of clock order");
    }
    // No limit here: the shard that wrote them took them, and a store restarted with a lower
    // --max-pending-pushes must not refuse its own checkpoint (new pushes wait until under it).
    queue.push_back(PendingPush{h.clock(), push});
  }
  absl::MutexLock lock(&mu_);
  if (!tensors_.empty()) {
    return absl::FailedPreconditionError("cannot restore into a store that holds a model");
  }
  pending_ = std::move(pending);
  round_sum_.Reset();
  for (const auto& [trainer, queue] : pending_) {
    for (const PendingPush& p : queue) round_sum_.Add(*p.push);
  }
  for (size_t i = 0; i < model.specs.size(); ++i) {
    // Copied: the table writes its tensors in place while nothing else holds them.
    tensors_[model.specs[i].name] = Tensor{model.specs[i], buffers_.Copy(model.tensor(i))};
  }
  live_version_ = model.live_version;
  last_closed_round_ = std::max<int64_t>(0, state.last_closed_round);
  for (const RoundCut& cut : state.cuts) {
    last_cut_[cut.trainer] = cut.clock;
    ever_members_.insert(cut.trainer.id);
  }
  for (const auto& [trainer, sequence] : state.sequences) {
    last_sequence_[{trainer.id, trainer.incarnation}] = sequence;
    ever_members_.insert(trainer.id);
  }
  taken_ = {state.taken.begin(), state.taken.end()};
  has_membership_ = state.has_membership;
  for (const TrainerKey& m : state.members) {
    member_incarnation_[m.id] = m.incarnation;
    ever_members_.insert(m.id);
  }
  names_ = {state.names.begin(), state.names.end()};
  job_end_ = state.job_end;
  model_bound_ = ExactMagnitude();
  KeepOneModelOfBuffers();
  snapshots_.clear();
  Publish(MakeSnapshot(last_closed_round_));
  return absl::OkStatus();
}

DurableState ParameterTable::Durable() {
  absl::ReaderMutexLock lock(&mu_);
  DurableState state;
  // In round modes the live model changes only when a round closes, and every close publishes it:
  // the newest snapshot then is the live model, with its round's checksum. Immediate pushes make
  // the live model newer: a snapshot of it (which copies no values either).
  const bool published = !snapshots_.empty() && snapshots_.back()->live_version == live_version_;
  state.model = published ? snapshots_.back() : MakeSnapshot(-1);
  state.last_closed_round = last_closed_round_;
  for (const auto& [trainer, clock] : last_cut_) state.cuts.push_back({trainer, clock});
  for (const auto& [key, sequence] : last_sequence_) {
    state.sequences.push_back({TrainerKey{key.first, key.second}, sequence});
  }
  for (const auto& [trainer, queue] : pending_) {
    for (const PendingPush& p : queue) state.pending.push_back(p.push);
  }
  state.taken.assign(taken_.begin(), taken_.end());
  state.has_membership = has_membership_;
  for (const auto& [id, incarnation] : member_incarnation_)
    state.members.push_back({id, incarnation});
  std::sort(state.members.begin(), state.members.end());
  state.names.assign(names_.begin(), names_.end());
  std::sort(state.names.begin(), state.names.end());
  state.job_end = job_end_;
  state.version = DurableVersionLocked();
  state.epoch = epoch_.fetch_add(1) + 1;
  return state;
}

absl::Status ParameterTable::TakeJobsWeight(v1::PushHeader& h) const {
  if (!rule_) {
    if (!std::isfinite(h.weight())) return absl::InvalidArgumentError("non-finite push weight");
    return absl::OkStatus();
  }
  const v1::ApplyMode job = rule_->apply_mode;
  if (job != v1::APPLY_MODE_IMMEDIATE && job != v1::APPLY_MODE_ROUND) {
    return absl::FailedPreconditionError(
        "this job takes no pushes: its trainers exchange models with each other");
  }
  if (h.apply_mode() != job) {
    return absl::FailedPreconditionError(absl::StrCat("this job applies pushes ",
                                                      v1::ApplyMode_Name(job), ", not ",
                                                      v1::ApplyMode_Name(h.apply_mode())));
  }
  // A re-sent sum of lost pushes is not a value the codec holds: it comes as float32.
  if (h.codec() != rule_->codec && !(h.resent() && h.codec() == v1::CODEC_NONE)) {
    return absl::InvalidArgumentError(absl::StrCat("this job's pushes are ",
                                                   v1::Codec_Name(rule_->codec), ", not ",
                                                   v1::Codec_Name(h.codec())));
  }
  const float carried = static_cast<float>(std::max<uint32_t>(1, h.pushes()));
  if (job == v1::APPLY_MODE_IMMEDIATE) {
    h.set_weight(h.resent() ? 1.0f : rule_->immediate_weight);
  } else {
    h.set_weight(h.resent() ? carried : 1.0f);
  }
  return absl::OkStatus();
}

bool ParameterTable::NearTheLimit(double grows) const {
  return !(model_bound_ + grows < kSafeMagnitude);
}

double ParameterTable::ExactMagnitude() const {
  double largest = 0;
  for (const auto& [name, t] : tensors_) {
    float m = 0;
    if (!tensor::CheckFinite(*t.values, &m).ok()) return std::numeric_limits<double>::infinity();
    largest = std::max<double>(largest, m);
  }
  return largest;
}

absl::Status ParameterTable::CheckStaysFinite(const rpc::StagedPush& push, float weight) const {
  for (const rpc::StagedChunk& chunk : push.chunks) {
    const std::string& name = push.tensors[chunk.tensor_index].name;
    if (!chunk.ScaledSumIsFinite(tensors_.at(name).values->data(), weight)) {
      return absl::InvalidArgumentError(absl::StrCat("the push would make tensor '", name,
                                                     "' non-finite (from element ", chunk.offset,
                                                     "): refused whole"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ApplyResult> ParameterTable::Apply(rpc::StagedPush push) {
  v1::PushHeader& h = push.header;
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckMember(h));
  ApplyResult result;
  const uint64_t sequence = h.sequence();  // `push` may be moved below
  const uint32_t pushes = h.pushes();
  const std::pair<uint64_t, uint64_t> trainer{h.trainer_id(), h.incarnation()};
  uint64_t& last = last_sequence_[trainer];
  result.epoch = epoch_.load();
  result.durable_epoch = durable_epoch_;
  if (sequence != 0 && sequence <= last) {
    result.duplicate = true;
    result.live_version = live_version_;
    auto applied = last_epoch_.find(trainer);
    result.epoch = sequence == last && applied != last_epoch_.end() ? applied->second : -1;
    return result;
  }
  RETURN_IF_ERROR(TakeJobsWeight(h));
  // Every tensor is checked before any is changed: the push applies entirely or not at all.
  for (const tensor::TensorSpec& spec : push.tensors) {
    auto it = tensors_.find(spec.name);
    if (it == tensors_.end() || it->second.spec.shape != spec.shape) {
      return absl::NotFoundError(absl::StrCat("tensor '", spec.name, "' is not held here"));
    }
  }
  switch (h.apply_mode()) {
    case v1::APPLY_MODE_IMMEDIATE: {
      const double grows = std::fabs(static_cast<double>(h.weight())) * push.max_magnitude;
      const bool near_limit = NearTheLimit(grows);
      if (near_limit) RETURN_IF_ERROR(CheckStaysFinite(push, h.weight()));
      result.weight = h.weight();
      // Every copy a snapshot forces (which may throw) before the first write: all or nothing.
      for (const tensor::TensorSpec& spec : push.tensors) Writable(tensors_.at(spec.name));
      for (const rpc::StagedChunk& chunk : push.chunks) {
        Tensor& t = tensors_[push.tensors[chunk.tensor_index].name];
        chunk.AddTo(Writable(t), h.weight());
      }
      model_bound_ += grows;
      ++live_version_;
      break;
    }
    case v1::APPLY_MODE_ROUND: {
      if (h.weight() <= 0) return absl::InvalidArgumentError("round pushes need a positive weight");
      const TrainerKey key{h.trainer_id(), h.incarnation()};
      auto cut = last_cut_.find(key);
      const bool late = cut != last_cut_.end() && h.clock() <= cut->second;
      if (late && !h.resent()) {
        return absl::FailedPreconditionError(
            absl::StrCat("push of clock ", h.clock(), " is late: trainer ", h.trainer_id(),
                         "'s round up to clock ", cut->second, " has closed"));
      }
      std::deque<PendingPush>& queue = pending_[key];
      if (queue.size() >= max_pending_pushes_) {
        return absl::ResourceExhaustedError(
            absl::StrCat("trainer ", h.trainer_id(), " has ", queue.size(),
                         " pushes waiting for a round that does not close"));
      }
      // A re-sent sum is older than the pushes that came after the restart: it goes before them
      // (at the cut's clock when late, so the next round takes it).
      const int64_t clock = late ? cut->second : h.clock();
      auto at = queue.end();
      if (h.resent()) {
        at = std::upper_bound(queue.begin(), queue.end(), clock,
                              [](int64_t c, const PendingPush& p) { return c < p.clock; });
      } else if (!queue.empty() && clock <= queue.back().clock) {
        return absl::FailedPreconditionError(
            absl::StrCat("push of clock ", clock, " after clock ", queue.back().clock));
      }
      // Its round weighs it at most 1 per push it carries (a mean, or 1/N of a sum): checked at 1
      // against the live model, its round's base, so no single push can overflow the model.
      if (NearTheLimit(push.max_magnitude)) RETURN_IF_ERROR(CheckStaysFinite(push, 1.0f));
      result.weight = h.weight();
      push.header.set_clock(clock);  // as a checkpoint keeps it
      auto staged = std::make_shared<const rpc::StagedPush>(std::move(push));
      queue.insert(at, PendingPush{clock, staged});
      round_sum_.Add(*staged);  // never throws: a push is in the sum if and only if it is pending
      ++round_pushes_taken_in_;
      break;
    }
    default:
      return absl::InvalidArgumentError("push without an apply mode");
  }
  if (sequence != 0) {
    last = sequence;
    last_epoch_[trainer] = result.epoch;
  }
  taken_[TrainerKey{trainer.first, trainer.second}] += std::max<uint32_t>(1, pushes);
  result.live_version = live_version_;
  return result;
}

absl::StatusOr<CloseResult> ParameterTable::CloseRound(const CloseRequest& request) {
  const int64_t round = request.round;
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckReconciled());
  if (auto it = close_results_.find(round); it != close_results_.end()) {
    CloseResult again = it->second;
    again.already_closed = true;
    return again;
  }
  if (last_closed_round_ < 0) {
    return absl::FailedPreconditionError("cannot close a round before the model is initialized");
  }
  if (round <= last_closed_round_) {
    // Closed before this table was restored from a checkpoint (close_results_ is not durable),
    // skipped to catch up with the coordinator, or too old to be recorded: it is done either way.
    // Answering OK is what lets a coordinator whose close reply a shard restart lost go on.
    CloseResult result{live_version_, 0, 0, /*already_closed=*/true};
    for (const auto& s : snapshots_) {
      if (s->round == round) result.checksum = s->checksum;
    }
    return result;
  }
  if (round != last_closed_round_ + 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot close round ", round, "; the open round is ", last_closed_round_ + 1));
  }
  if (request.aggregation != v1::AGGREGATION_MEAN &&
      request.aggregation != v1::AGGREGATION_SCALED) {
    return absl::InvalidArgumentError("close without an aggregation");
  }
  if (!(std::fabs(request.scale) <= std::numeric_limits<float>::max())) {
    return absl::InvalidArgumentError("round scale beyond float's range");
  }

  // Take the pushes the cuts name.
  std::vector<PendingPush> taken;
  double weight_sum = 0;
  for (const RoundCut& cut : request.cuts) {
    int64_t& last = last_cut_[cut.trainer];
    last = std::max(last, cut.clock);
    auto it = pending_.find(cut.trainer);
    if (it == pending_.end()) continue;
    std::deque<PendingPush>& queue = it->second;
    while (!queue.empty() && queue.front().clock <= cut.clock) {
      weight_sum += queue.front().push->header.weight();
      taken.push_back(std::move(queue.front()));
      queue.pop_front();
    }
  }
  // Departed trainers' leftovers can never be cut: drop them.
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto member = member_incarnation_.find(it->first.id);
    const bool live =
        member != member_incarnation_.end() && member->second == it->first.incarnation;
    it = (it->second.empty() || !live) ? pending_.erase(it) : std::next(it);
  }

  const double factor = request.aggregation == v1::AGGREGATION_MEAN
                            ? (weight_sum > 0 ? 1.0 / weight_sum : 0.0)
                            : request.scale;
  // The sum kept since the pushes arrived holds exactly the pending pushes while it is valid: when
  // the cuts took as many, they took them all.
  const bool summed = !taken.empty() && round_sum_.valid() && pending_.empty() &&
                      taken.size() == round_sum_.pushes();
  double grows = 0;
  if (summed) {
    // Each summed tensor's new values are written over its sum, which then replaces them: no copy
    // of the old values, which the round snapshots that share them keep. Nothing is allocated, so
    // the model changes whole.
    for (auto& [name, t] : tensors_) {
      TensorBuffers::Buffer values = round_sum_.Take(name);
      if (!values) continue;
      tensor::ScaleThenAdd(values->data(), *t.values, static_cast<float>(factor));
      t.values = std::move(values);
    }
    grows = std::fabs(factor) * round_sum_.bound();
  } else {
    for (const PendingPush& p : taken) {  // the copies first, as above
      for (const tensor::TensorSpec& spec : p.push->tensors) Writable(tensors_.at(spec.name));
    }
    for (const PendingPush& p : taken) {
      const float scale = static_cast<float>(factor * p.push->header.weight());
      for (const rpc::StagedChunk& chunk : p.push->chunks) {
        Tensor& t = tensors_[p.push->tensors[chunk.tensor_index].name];
        chunk.AddTo(Writable(t), scale);
      }
      grows += std::fabs(static_cast<double>(scale)) * p.push->max_magnitude;
    }
  }
  // The next round's sum starts empty; one that missed pushes left pending is of no more use
  // until nothing is pending.
  if (pending_.empty()) {
    round_sum_.Reset();
  } else {
    round_sum_.Invalidate();
  }
  model_bound_ += grows;
  last_closed_round_ = round;
  ++live_version_;
  auto snapshot = MakeSnapshot(round);
  CloseResult result{live_version_, snapshot->checksum, static_cast<uint32_t>(taken.size())};
  result.summed_on_arrival = summed;
  Publish(std::move(snapshot));
  close_results_[round] = result;
  while (close_results_.size() > 64) close_results_.erase(close_results_.begin());
  return result;
}

absl::StatusOr<std::shared_ptr<const ModelSnapshot>> ParameterTable::Snapshot(
    int64_t round, bool newest_if_dropped) const {
  absl::ReaderMutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckReconciled());
  if (round < 0) return MakeSnapshot(-1);
  if (round > last_closed_round_) {
    return absl::FailedPreconditionError(
        absl::StrCat("round ", round, " is not closed yet (last ", last_closed_round_, ")"));
  }
  for (const auto& s : snapshots_) {
    if (s->round == round) return s;
  }
  // Rounds are published in order and the last closed one is always kept: it is the newest.
  if (newest_if_dropped && !snapshots_.empty() && snapshots_.back()->round > round) {
    return snapshots_.back();
  }
  return absl::NotFoundError(absl::StrCat("round ", round, " is no longer kept (oldest ",
                                          snapshots_.empty() ? -1 : snapshots_.front()->round,
                                          ")"));
}

std::shared_ptr<const ModelSnapshot> ParameterTable::MakeSnapshot(int64_t round) const {
  auto s = std::make_shared<ModelSnapshot>();
  s->round = round;
  s->live_version = live_version_;
  tensor::ModelChecksum checksum;
  for (const auto& [name, t] : tensors_) {
    s->specs.push_back(t.spec);
    s->values.push_back(t.values);
    if (round >= 0) checksum.Add(*t.values);
  }
  if (round >= 0) s->checksum = checksum.value();
  return s;
}

void ParameterTable::KeepOneModelOfBuffers() {
  size_t bytes = 0;
  for (const auto& [name, t] : tensors_) bytes += t.values->size() * sizeof(float);
  buffers_.SetMaxKeptBytes(bytes);
}

float* ParameterTable::Writable(Tensor& t) {
  // Every reference besides the table's was copied from a snapshot's, and snapshots take theirs
  // only under mu_: with mu_ held exclusively and a count of one, none exists to copy from.
  if (t.values.use_count() > 1) {
    t.values = buffers_.Copy(*t.values);
  } else {
    // The last snapshot to let go may have done so on another thread: its reads of these values
    // happen before the writes that follow (use_count() reads the count relaxed).
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  return t.values->data();
}

void ParameterTable::Publish(std::shared_ptr<const ModelSnapshot> snapshot) {
  snapshots_.push_back(std::move(snapshot));
  while (static_cast<int>(snapshots_.size()) > snapshots_kept_) snapshots_.pop_front();
}

}  // namespace syncopate::store
