// How stale each delta is when the store applies it: how many other deltas the store applied
// after the model the delta was computed on was read, and before the delta itself. This is the
// staleness that costs a job accuracy per step (a gradient taken at an old model and applied to a
// newer one); the clock gap between trainers that SSP bounds is not it (under asp a straggler's
// clock falls far behind, yet it pulls the live model every step).
// A round close applies its deltas at once; it is counted as applying them one after the other in
// the order they were pushed, as the sequential SGD it stands for would: under bsp a round of N
// deltas computed on one snapshot misses 0, 1, ..., N - 1 of them (the cost of a larger batch),
// and a trainer that took several steps in the round (wbsp) misses the others' steps between its
// own. The trainer's own deltas never count: its local model holds them. For the cluster
// simulator (cluster_sim.h), whose trainer ids are dense from 1; not thread-safe.
#ifndef SYNCOPATE_SYNC_DELTA_STALENESS_H_
#define SYNCOPATE_SYNC_DELTA_STALENESS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "sync/policy.h"

namespace syncopate::sync {

// How many other deltas (or steps) each one missed, as a histogram.
class MissedCounts {
 public:
  void Add(int64_t missed);
  int64_t count() const { return count_; }
  // The mean and a quantile (q in [0, 1]); 0 with none.
  double Mean() const;
  double Quantile(double q) const;

 private:
  std::map<int64_t, int64_t> counts_;  // missed -> how many
  int64_t count_ = 0;
  double sum_ = 0;
};

class DeltaStaleness {
 public:
  // `rounds`: deltas join rounds and are applied as the rounds close (PushMode::kRound);
  // otherwise each is applied as it is pushed (PushMode::kImmediate).
  explicit DeltaStaleness(bool rounds) : rounds_(rounds) {}

  // Trainer `trainer` joined at clock `start` (its next delta is start + 1).
  void Joined(TrainerId trainer, int64_t start);
  // It read the live model (which holds every delta it pushed, up to `own_clock`).
  void ReadLive(TrainerId trainer, int64_t own_clock);
  // It read round `round`'s snapshot, which holds its deltas up to `own_clock` (-1: none).
  void ReadRound(TrainerId trainer, int64_t round, int64_t own_clock);
  // It pushed delta `clock`, computed on the model it read last (plus its own deltas since).
  void Pushed(TrainerId trainer, int64_t clock);
  // A round closed: it applies every trainer's pending deltas up to its cut.
  void Closed(const RoundClose& close);

  // Over every delta applied so far: how many it was.
  int64_t deltas() const { return missed_.count(); }
  // The mean and a quantile (q in [0, 1]) of the other deltas each one missed; 0 with none.
  // Divide by N for steps of the job under the default step-size rule (sum/n: a delta is 1/N of
  // a step); under sum, where each delta weighs a whole step, they are steps already.
  double Mean() const { return missed_.Mean(); }
  double Quantile(double q) const { return missed_.Quantile(q); }

 private:
  struct Pending {
    uint64_t seq = 0;  // push order, over every trainer
    int64_t clock = 0;
    int64_t version = 0;    // deltas in the model it was computed on
    int64_t own_clock = 0;  // the trainer's own deltas in that model, up to this clock
  };
  struct Trainer {
    int64_t version = 0;
    int64_t own_clock = 0;
    int64_t applied_clock = 0;  // its deltas the store applied, up to this clock
    int64_t start = 0;          // the clock it joined at
    std::deque<Pending> pending;
  };
  // Records `delta` of `trainer` as the store applies it after every delta before.
  void Apply(Trainer& trainer, const Pending& delta);
  // Trainer `id`'s entry (made on first use); nullptr from Find for one never seen.
  Trainer& At(TrainerId id);
  Trainer* Find(TrainerId id);

  const bool rounds_;
  uint64_t pushes_ = 0;
  int64_t applied_ = 0;                        // deltas in the store's model
  std::map<int64_t, int64_t> round_versions_;  // round -> deltas in its snapshot
  std::vector<Trainer> trainers_;              // by id - 1
  MissedCounts missed_;
};

// The smallest value whose cumulative count reaches `q` (in [0, 1]) of all the counts, in a
// histogram (value -> how many); 0 when it is empty.
double HistogramQuantile(const std::map<int64_t, int64_t>& counts, double q);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_DELTA_STALENESS_H_
