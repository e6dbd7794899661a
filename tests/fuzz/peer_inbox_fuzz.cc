// libFuzzer target: what a trainer does with peers' models (client/peer_exchange.h) - each stream
// validated as the Peer service does (PushAssembler against this trainer's shapes) and deposited
// into the ExchangeInbox under the sender and round its header names - interleaved with what the
// trainer's own threads do: collect a round, take the latest models, mark a peer gone, learn the
// peers' names. Input: a sequence of operations, each a byte and its arguments (InputReader; see
// WritePeerInboxSeeds in seeds.cc). Beyond not crashing: every
// model the inbox hands out fits this trainer's shapes, and mixing it in (MixInto, with the mass
// the stream's header carries) either succeeds with a finite mass at least the trainer's own or
// leaves the trainer's model unchanged.

#include <cmath>
#include <string>

#include "client/peer_exchange.h"
#include "fuzz_input.h"
#include "rpc/byte_buffer_testing.h"
#include "rpc/push_assembler.h"
#include "spdlog/spdlog.h"

namespace syncopate::fuzz {
namespace {

// The inbox warns of every model it drops; at fuzzing rates the log would be the bottleneck.
[[maybe_unused]] const bool kLogsOff = (spdlog::set_level(spdlog::level::off), true);

void RequireFits(const std::map<uint64_t, client::PeerModel>& received,
                 const tensor::TensorMap& own) {
  for (const auto& [sender, peer] : received) {
    for (const auto& [name, values] : peer.model) {
      auto mine = own.find(name);
      Require(mine != own.end() && mine->second.size() == values.size(),
              "a received tensor has this trainer's shape");
    }
  }
  tensor::TensorMap mixed = own;
  absl::StatusOr<double> mass = client::MixInto(mixed, 1.0, received);
  if (!mass.ok()) {
    Require(mixed == own, "a failed mix leaves the model unchanged");
  } else {
    Require(std::isfinite(*mass) && *mass >= 1.0, "a mix's mass is finite and at least its own");
  }
}

void Deposit(InputReader& input, client::ExchangeInbox& inbox, const rpc::SpecLookup& lookup) {
  const std::string caller = input.ShortString();
  const std::string bytes = input.LongString();
  // Raw, as the Peer service reads a stream; each message in slices of 7 bytes, every payload left
  // in them (a real model's payloads are large enough to stay; this target's are not).
  rpc::PushAssembler assembler(lookup, /*copy_below=*/0);
  for (const std::string& message :
       DecodeRawStream(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) {
    if (!assembler.Add(rpc::testing::Cut(message, 7, 7)).ok()) return;
  }
  absl::StatusOr<rpc::StagedPush> push = assembler.Finish();
  if (!push.ok()) return;
  inbox
      .Deposit(push->header.clock(), push->header.trainer_id(), client::ToTensorMap(*push), caller,
               push->header.weight())
      .IgnoreError();
}

}  // namespace
}  // namespace syncopate::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace syncopate;
  static const tensor::TensorMap own = fuzz::FuzzModel();
  static const rpc::SpecLookup lookup = client::ShapeLookup(own);
  fuzz::InputReader input(data, size);
  client::ExchangeInbox inbox;
  while (!input.empty()) {
    switch (input.Byte() % 5) {
      case 0:
        fuzz::Deposit(input, inbox, lookup);
        break;
      case 1: {
        const int64_t round = static_cast<int8_t>(input.Byte());
        std::vector<uint64_t> senders;
        for (int n = input.Byte() % 8; n > 0; --n) senders.push_back(input.Byte());
        // A deadline already past: the inbox hands out what arrived without waiting.
        fuzz::RequireFits(inbox.Collect(round, senders, absl::InfinitePast()), own);
        break;
      }
      case 2:
        fuzz::RequireFits(inbox.TakeLatest(), own);
        break;
      case 3:
        inbox.MarkGone(input.Byte());
        break;
      case 4: {
        const bool plan = input.Byte() % 2 == 0;  // a round's plan, or only the names
        v1::PeerExchange exchange;
        exchange.set_round(static_cast<int8_t>(input.Byte()));
        for (int n = input.Byte() % 8; n > 0; --n) {
          v1::PeerRef* peer = exchange.add_receive_from();
          peer->set_trainer_id(input.Byte());
          peer->set_name(input.ShortString());
        }
        if (plan) {
          inbox.PlanRound(exchange);
        } else {
          inbox.NamePeers(exchange);
        }
        break;
      }
    }
  }
  return 0;
}
