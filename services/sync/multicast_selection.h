// Receiver selection for peer-to-peer model multicast, one synchronization round at a time:
// SelMcast's BSP algorithm (Luo et al., TSC 2024, Algorithm 1: greedy load balancing over the
// receivers' bandwidth, then Pareto additions) and the Orpheus baseline (p receivers at random).
// Both keep the k-round rule: a pair (i, j) not synchronized in the last k rounds is forced, so
// every pair synchronizes at least once every k+1 rounds.
//
// Bandwidth follows the paper's switch model: sender i uploads at most `upload[i]` bytes/s (the
// paper's ingress b_i^I, the switch port i sends into) and receiver j downloads at most
// `download[j]` (the paper's egress b_j^E). Pure functions; no clocks, no threads.
#ifndef SYNCOPATE_SYNC_MULTICAST_SELECTION_H_
#define SYNCOPATE_SYNC_MULTICAST_SELECTION_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"

namespace syncopate::sync {

// How a sender's bytes grow with its receivers.
enum class MulticastLayer {
  kL3,  // network multicast: a sender sends its model once, whatever the number of receivers
  kL7,  // application fan-out (unicast streams): a sender sends its model once per receiver
};

// Square 0/1 matrix over n trainers: at(i, j) is "i sends to j".
class PairMatrix {
 public:
  explicit PairMatrix(int n = 0) : n_(n), cells_(static_cast<size_t>(n) * n, 0) {}
  int size() const { return n_; }
  bool at(int i, int j) const { return cells_[Index(i, j)] != 0; }
  void set(int i, int j, bool value) { cells_[Index(i, j)] = value ? 1 : 0; }
  int RowCount(int i) const;     // receivers of i
  int ColumnCount(int j) const;  // senders to j
  bool operator==(const PairMatrix& other) const { return cells_ == other.cells_; }

 private:
  size_t Index(int i, int j) const { return static_cast<size_t>(i) * n_ + j; }
  int n_;
  std::vector<uint8_t> cells_;
};

// The k-round rule's memory: the last round each pair synchronized. Round numbers start at 0.
class PairHistory {
 public:
  PairHistory(int n, int k);
  int size() const { return n_; }
  int k() const { return k_; }
  // c_ij: rounds since i last sent to j, as of round `round` (round + 1 if never).
  int64_t RoundsSince(int i, int j, int64_t round) const;
  // Whether round `round` must include (i, j): it was not synchronized in the last k rounds.
  bool Forced(int i, int j, int64_t round) const { return RoundsSince(i, j, round) > k_; }
  // Records round `round`'s pairs.
  void Record(const PairMatrix& sends, int64_t round);
  // Sets the last round (i, j) synchronized (-1: never).
  void Set(int i, int j, int64_t last_round) {
    last_[static_cast<size_t>(i) * n_ + j] = last_round;
  }

 private:
  int n_;
  int k_;
  std::vector<int64_t> last_;  // n*n; -1: never
};

struct MulticastProblem {
  std::vector<double> upload;      // bytes/s each sender can upload (b^I)
  std::vector<double> download;    // bytes/s each receiver can download (b^E)
  std::vector<double> volume;      // bytes each sender multicasts (v_i)
  std::vector<int> min_receivers;  // p_i, at most n-1
  MulticastLayer layer = MulticastLayer::kL3;

  int size() const { return static_cast<int>(upload.size()); }
  // INVALID_ARGUMENT unless every vector has n entries, rates and volumes are positive and finite,
  // and 0 <= p_i <= n-1.
  absl::Status Validate() const;
};

struct MulticastPlan {
  PairMatrix sends;
  // The pairs SelMcast's Pareto step added (a subset of `sends`): they use spare bandwidth only,
  // so transfers to them run at a lower priority than the rest (strict priority, work-conserving).
  PairMatrix additions;
  // The bottleneck estimate of the round's completion: max over senders of bytes sent / upload
  // and over receivers of bytes received / download.
  double estimated_seconds = 0;
};

// Bytes sender i sends under `sends` (L3: its volume once if it has a receiver; L7: per receiver).
double SendBytes(const MulticastProblem& problem, const PairMatrix& sends, int i);
// Bytes receiver j receives under `sends`.
double ReceiveBytes(const MulticastProblem& problem, const PairMatrix& sends, int j);
// The bottleneck estimate of MulticastPlan::estimated_seconds.
double EstimateSeconds(const MulticastProblem& problem, const PairMatrix& sends);

// SelMcast's Algorithm 1 for round `round`. Forced pairs first; then, senders with the most
// forced receivers first, each tops up to p_i receivers with the lightest normalized load
// ((volume + bytes already coming) / download), where among the loads within 10% of the heaviest
// one it needs (either way) the pair synchronized longest ago goes first, and clearly lighter ones
// are always taken (so that with static bandwidths the pairs rotate instead of all coming due
// under the k-round rule at once); then every unselected pair,
// longest unsynchronized first, is added when it lengthens neither the sender's nor the
// receiver's time beyond the estimate (skipped when `pareto_additions` is false). With a
// `pareto_margin` m (clamped to [0, 1]; NaN counts as 0), an addition must keep both within
// (1 - m) × the estimate, the sender's only where the addition adds to its upload (under L3 a
// sender that already sends sends once): the paper's rule is m = 0, which trusts the rates
// exactly; measured rates are not exact, and an addition that fills a link to the estimate
// lengthens the round whenever the link is a little slower than measured. Deterministic: remaining
// ties go to the lower index.
MulticastPlan SelectSelMcast(const MulticastProblem& problem, const PairHistory& history,
                             int64_t round, bool pareto_additions = true, double pareto_margin = 0);

// Orpheus as SelMcast's evaluation runs it: forced pairs first, then up to p_i receivers drawn
// uniformly at random from the rest.
MulticastPlan SelectOrpheus(const MulticastProblem& problem, const PairHistory& history,
                            int64_t round, std::mt19937_64& rng);

// Moves `count` (at most all, at least none) of `candidates`, drawn uniformly without replacement,
// to its front in the order drawn (a partial Fisher-Yates shuffle); returns how many it moved.
int DrawUniformly(std::vector<int>& candidates, int count, std::mt19937_64& rng);

// The default p: ceil(fraction * n), clamped to [1, n-1] (0 when n < 2).
int DefaultMinReceivers(int n, double fraction = 0.3);

// A Pareto margin as the selections use it (SelectSelMcast's and SelectSelMcastOnline's): clamped
// to [0, 1], NaN counted as 0.
double ParetoMargin(double margin);

// Relative slack on the time limits the selections compare against ("does not lengthen the
// estimate", "stays within the deadline"), against rounding in sums of bytes.
inline constexpr double kLimitSlack = 1e-9;

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_MULTICAST_SELECTION_H_
