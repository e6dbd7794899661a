#include "coordinator/trainer_input.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "rpc/identity.h"

namespace syncopate::coordinator {
namespace {

using rpc::Quoted;

absl::Status CheckSeconds(const char* field, double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxReportedSeconds) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " must be finite, in [0, ", kMaxReportedSeconds, "] seconds; got ", seconds));
  }
  return absl::OkStatus();
}

// `part` <= `whole` up to rounding between the trainer's clocks.
absl::Status CheckWithin(const char* part_field, double part, const char* whole_field,
                         double whole) {
  if (part > whole * 1.01 + 1.0) {
    return absl::InvalidArgumentError(
        absl::StrCat(part_field, " (", part, " s) exceeds ", whole_field, " (", whole, " s)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckTrainerName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxTrainerNameLength) {
    return absl::InvalidArgumentError(absl::StrCat("a trainer name has 1 to ",
                                                   kMaxTrainerNameLength, " characters; got ",
                                                   name.size(), ": ", Quoted(name)));
  }
  if (!rpc::IsValidName(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a trainer name takes only letters, digits, '.', '_' and '-': ", Quoted(name)));
  }
  return absl::OkStatus();
}

absl::Status CheckFinishReason(absl::string_view reason) {
  if (reason.empty() || !rpc::IsPrintableText(reason, kMaxFinishReasonLength)) {
    return absl::InvalidArgumentError(absl::StrCat("a reason to finish is 1 to ",
                                                   kMaxFinishReasonLength,
                                                   " printable characters: ", Quoted(reason)));
  }
  return absl::OkStatus();
}

absl::Status CheckJoin(const v1::Join& join) {
  if (absl::Status s = CheckTrainerName(join.name()); !s.ok()) return s;
  const std::string& address = join.peer_address();
  bool printable = address.size() <= kMaxPeerAddressLength;
  for (char c : address) printable = printable && c > ' ' && c < 0x7f;
  if (!printable) {
    return absl::InvalidArgumentError(absl::StrCat("a peer address is host:port, at most ",
                                                   kMaxPeerAddressLength,
                                                   " printable characters: ", Quoted(address)));
  }
  if (!std::isfinite(join.slowdown()) || join.slowdown() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("slowdown must be finite and not negative; got ", join.slowdown()));
  }
  return absl::OkStatus();
}

absl::Status CheckTimings(const v1::TrainerTimings& t) {
  for (auto [field, seconds] : {std::pair{"compute_seconds", t.compute_seconds()},
                                {"wait_seconds", t.wait_seconds()},
                                {"communication_seconds", t.communication_seconds()},
                                {"wall_seconds", t.wall_seconds()},
                                {"emulated_compute_seconds", t.emulated_compute_seconds()}}) {
    if (absl::Status s = CheckSeconds(field, seconds); !s.ok()) return s;
  }
  for (auto [field, seconds] : {std::pair{"compute_seconds", t.compute_seconds()},
                                {"wait_seconds", t.wait_seconds()},
                                {"communication_seconds", t.communication_seconds()}}) {
    if (absl::Status s = CheckWithin(field, seconds, "wall_seconds", t.wall_seconds()); !s.ok()) {
      return s;
    }
  }
  return CheckWithin("emulated_compute_seconds", t.emulated_compute_seconds(), "compute_seconds",
                     t.compute_seconds());
}

absl::Status CheckTransfers(const v1::TransferReport& t) {
  for (auto [field, bytes] :
       {std::pair{"sent_bytes", t.sent_bytes()}, {"received_bytes", t.received_bytes()}}) {
    if (!std::isfinite(bytes) || bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " must be finite and not negative; got ", bytes));
    }
  }
  if (absl::Status s = CheckSeconds("send_seconds", t.send_seconds()); !s.ok()) return s;
  if (absl::Status s = CheckSeconds("receive_seconds", t.receive_seconds()); !s.ok()) return s;
  for (const auto& [field, streams] : {std::pair{"sent_streams", &t.sent_streams()},
                                       {"received_streams", &t.received_streams()}}) {
    if (streams->size() > kMaxReportedStreams) {
      return absl::InvalidArgumentError(absl::StrCat(field, " lists ", streams->size(),
                                                     " streams; at most ", kMaxReportedStreams));
    }
    for (const v1::StreamTransfer& stream : *streams) {
      if (!std::isfinite(stream.bytes()) || stream.bytes() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ": a stream's bytes must be finite and not negative; got ", stream.bytes()));
      }
      for (auto [what, seconds] :
           {std::pair{"start_seconds", stream.start_seconds()}, {"seconds", stream.seconds()}}) {
        if (absl::Status s = CheckSeconds(what, seconds); !s.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(field, ": ", s.message()));
        }
      }
    }
  }
  return absl::OkStatus();
}

sync::TransferSample TransferSampleOf(const v1::TransferReport& t) {
  sync::TransferSample sample{t.sent_bytes(),
                              t.send_seconds(),
                              t.received_bytes(),
                              t.receive_seconds(),
                              static_cast<int>(t.models_sent()),
                              {},
                              {}};
  for (const auto& [streams, out] : {std::pair{&t.sent_streams(), &sample.sent_streams},
                                     {&t.received_streams(), &sample.received_streams}}) {
    for (const v1::StreamTransfer& s : *streams) {
      out->push_back({s.peer(), s.bytes(), s.start_seconds(), s.seconds()});
    }
  }
  return sample;
}

absl::Status CheckAccuracy(double accuracy, double age_seconds) {
  if (!(accuracy >= 0 && accuracy <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("test accuracy must be in [0, 1]; got ", accuracy));
  }
  return CheckSeconds("test_accuracy_age_seconds", age_seconds);
}

}  // namespace syncopate::coordinator
