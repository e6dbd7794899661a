// selmcast-ssp's and orpheus-ssp's sending side: a trainer's multicasts run on their own threads
// while the trainer computes. A multicast runs until each transfer is delivered, fails, or is
// cancelled: by the coordinator (StopSending preempts single receivers), or by a newer multicast
// to the same receiver (the newer model supersedes the older on that pair only).
#ifndef SYNCOPATE_CLIENT_BACKGROUND_MULTICAST_H_
#define SYNCOPATE_CLIENT_BACKGROUND_MULTICAST_H_

#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/peer_exchange.h"
#include "client/peer_link.h"

namespace syncopate::client {

class BackgroundMulticast {
 public:
  explicit BackgroundMulticast(PeerSender& sender) : sender_(sender) {}
  ~BackgroundMulticast();  // cancels what still runs and waits for it

  // What became of the transfers that ended since the last Take.
  using Outcomes = MulticastOutcomes;

  // Cancels the earlier transfers to any of `peers`, then sends `model`, carrying push-sum mass
  // `mass` to each, as round `round` from `from` to every peer, each stream until `deadline`. The
  // earlier transfers to other receivers go on. Returns at once: nothing here waits for a
  // transfer (a cancelled one stops at its next chunk, in its own thread). Returns the mass it
  // did not send, which stays with the sender: the shares of receivers preempted before the
  // multicast started, and of receivers that a share may still be on its way to
  // (PeerSender::Book). Those get the model without a new share; the running sums bring
  // them the one on its way. So a pair holds at most one share in flight, however often newer
  // models supersede older ones on it. The share of a transfer that started never comes back,
  // whatever becomes of it: the next model to that receiver carries it (PeerSender::SendOne).
  double Start(const std::vector<v1::PeerRef>& peers, uint64_t from, int64_t round,
               tensor::TensorMap model, double mass, absl::Time deadline);
  // Preempts the round-`round` transfers to `receivers`; a no-op for a transfer of another round
  // (a stale directive) or one that already ended. For a round newer than any started yet (the
  // trainer starts a multicast after the step that follows its exchange, and the coordinator may
  // preempt it before), the stop is kept, and Start leaves those receivers out: their shares
  // come back as cancelled.
  void Stop(int64_t round, const std::vector<uint64_t>& receivers);
  Outcomes Take();

 private:
  struct Transfer {
    uint64_t receiver = 0;
    int64_t round = 0;
    TransferCancel cancel;
    std::thread thread;
    bool ended = false;  // guarded by mu_: its thread is done but for returning (join is immediate)
  };
  // Cancels and joins `transfers`. Call without mu_ held.
  static void Finish(std::vector<std::unique_ptr<Transfer>>& transfers);

  PeerSender& sender_;
  absl::Mutex mu_;
  int64_t newest_round_ ABSL_GUARDED_BY(mu_) = -1;  // of the multicasts started
  // Stops for rounds not started yet: round -> receivers.
  std::map<int64_t, std::set<uint64_t>> early_stops_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Transfer>> transfers_ ABSL_GUARDED_BY(mu_);
  Outcomes outcomes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_BACKGROUND_MULTICAST_H_
