// What the coordinator takes on a trainer's word, and what it refuses: it trusts nothing a client
// states that it could not check (docs/security.md). Each check is INVALID_ARGUMENT naming the
// field.
#ifndef SYNCOPATE_COORDINATOR_TRAINER_INPUT_H_
#define SYNCOPATE_COORDINATOR_TRAINER_INPUT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rpc/identity.h"
#include "sync/bandwidth_estimator.h"
#include "syncopate/v1/coordinator.pb.h"

namespace syncopate::coordinator {

// The longest trainer name: a Kubernetes object name (DNS subdomain) fits; the rule of every
// process name (rpc/identity.h), so that a trainer's certificate can name it.
inline constexpr size_t kMaxTrainerNameLength = rpc::kMaxNameLength;
// The longest peer address (host:port).
inline constexpr size_t kMaxPeerAddressLength = 261;
// The largest duration a trainer may report, in seconds (about 31.7 years).
inline constexpr double kMaxReportedSeconds = 1e9;

// A trainer name: 1 to kMaxTrainerNameLength characters out of [A-Za-z0-9._-], so that it is safe
// in logs, metric labels and file names. The error quotes at most 64 escaped characters of it.
absl::Status CheckTrainerName(absl::string_view name);

// A join: its name, peer address (printable ASCII without spaces, bounded) and slowdown (finite,
// not negative).
absl::Status CheckJoin(const v1::Join& join);

// Timings: every figure finite, not negative and at most kMaxReportedSeconds; compute, wait and
// communication each at most the wall time, and the emulated compute at most the compute (each
// with 1 s and 1% of slack for rounding between the trainer's clocks).
absl::Status CheckTimings(const v1::TrainerTimings& timings);

// The most streams a transfer report may list per direction: what a trainer lists at most
// (client::TransferMeter::kMaxStreams); the bandwidth estimate is quadratic in them.
inline constexpr int kMaxReportedStreams = 256;

// A transfer report: byte counts and durations finite and not negative, durations bounded as
// timings are, also each listed stream's (its start too), and at most kMaxReportedStreams streams
// per direction.
absl::Status CheckTransfers(const v1::TransferReport& transfers);

// A checked transfer report as the policies' bandwidth estimators take it.
sync::TransferSample TransferSampleOf(const v1::TransferReport& transfers);

// The longest reason an operator may give for ending training (Coordinator::Finish).
inline constexpr size_t kMaxFinishReasonLength = 256;
// A reason to end training: 1 to kMaxFinishReasonLength printable ASCII characters (it goes into
// logs and the status).
absl::Status CheckFinishReason(absl::string_view reason);

// A test accuracy in [0, 1] with a finite, non-negative age.
absl::Status CheckAccuracy(double accuracy, double age_seconds);

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_TRAINER_INPUT_H_
