// How stale each step of a peer-to-peer job is: the counterpart of delta_staleness.h for the
// modes that average models instead of applying deltas (dssync, selmcast, orpheus and the -ssp
// variants). A trainer's model holds a prefix of every trainer's steps: its own, and whatever the
// models it averaged in held (an average holds what any of its inputs held; the weights are not
// counted). A step misses the other trainers' steps that were done before it was (in the job's
// sequential order, the steps before it) and that the model it was computed on did not hold.
//
// Under rounds of all-to-all exchanges this is bsp's count (a round's steps miss 0, 1, ..., N - 1
// of each other, the cost of a larger batch); a trainer that averages with only some of the
// others misses the rest's steps until they reach it through later exchanges (dssync's groups,
// selmcast's receivers). In a round's exchange a model is its sender's at the sender's last step;
// a background multicast (the -ssp modes) carries the model of the step it was sent after and is
// averaged in by a receiver's first step after it arrived (a multicast superseded or preempted on
// the way is counted as delivered, so there the count is a lower bound). For the cluster
// simulator, whose trainer ids are dense from 1; not thread-safe. Each step and each model
// averaged in cost O(N).
#ifndef SYNCOPATE_SYNC_PEER_STALENESS_H_
#define SYNCOPATE_SYNC_PEER_STALENESS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "sync/delta_staleness.h"
#include "sync/policy.h"

namespace syncopate::sync {

class PeerStaleness {
 public:
  // Trainer `trainer` joined at clock `start` (its next step is start + 1), with a model that
  // holds none of the job's steps (the initial one; a newcomer averages trained ones in first).
  void Joined(TrainerId trainer, int64_t start);
  // Before its next step, `trainer` averaged in the models of `senders`, each as it was at that
  // sender's last step. Unknown senders are ignored.
  void Averaged(TrainerId trainer, const std::vector<TrainerId>& senders);
  // `trainer` finished step `clock`, computed on the model it held since it last averaged (with
  // its own steps since).
  void Stepped(TrainerId trainer, int64_t clock);
  // Background multicasts: `sender` sent the model of its last step to `receivers`, where it
  // arrives at `arrives`; each averages it in with Received at or after that time.
  void Sent(TrainerId sender, const std::vector<TrainerId>& receivers, absl::Time arrives);
  // Before its next step, `trainer` averages in every model sent to it that arrived by `now`.
  void Received(TrainerId trainer, absl::Time now);

  // Over every step so far: how many there were.
  int64_t steps() const { return missed_.count(); }
  // The mean and a quantile (q in [0, 1]) of the other trainers' steps each one missed; 0 with
  // none. Divide by N for steps of the job (each trainer's step is 1/N of the job's progress, as
  // a delta under the store's default step-size rule).
  double Mean() const { return missed_.Mean(); }
  double Quantile(double q) const { return missed_.Quantile(q); }

 private:
  // By trainer index (id - 1): that trainer's steps a model holds, up to this clock; an entry
  // missing or below that trainer's start holds none of its steps.
  using Holds = std::vector<int64_t>;
  struct Trainer {
    int64_t start = 0;  // the clock it joined at: steps up to it are none of the job's
    int64_t clock = 0;  // its last step
    Holds holds;
    std::shared_ptr<const Holds> sent;  // `holds` as of its last step: what it sends
    std::multimap<absl::Time, std::shared_ptr<const Holds>> inbox;  // by arrival
  };
  Trainer& At(TrainerId id);
  // Trainer `id`'s entry; nullptr for one never seen.
  Trainer* Find(TrainerId id);
  static void Merge(Holds& into, const Holds& model);
  // Up to which clock `model` holds the steps of trainer index `j`.
  int64_t Held(const Holds& model, size_t j) const;

  std::vector<Trainer> trainers_;  // by id - 1
  MissedCounts missed_;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_PEER_STALENESS_H_
