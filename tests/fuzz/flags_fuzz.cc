// libFuzzer target: the parsers of flag values every binary shares (base/flags.h) and of the
// identities in peers' certificates (rpc/identity.h). Input: the text. Beyond not crashing: what
// parses obeys each parser's contract, and an identity that parses prints back as the same one.

#include <cmath>

#include "base/flags.h"
#include "fuzz_input.h"
#include "rpc/identity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace syncopate;
  using fuzz::Require;
  const std::string text(reinterpret_cast<const char*>(data), size);

  if (absl::StatusOr<absl::Duration> d = base::ParseDuration(text); d.ok()) {
    Require(*d >= absl::ZeroDuration(), "a duration is not negative");
  }
  if (absl::StatusOr<double> rate = base::ParseRate(text); rate.ok()) {
    Require(std::isfinite(*rate) && *rate > 0, "a rate is positive and finite");
  }
  if (absl::StatusOr<std::vector<double>> list = base::ParseDoubleList(text); list.ok()) {
    Require(!list->empty(), "a list has an item");
  }
  for (const std::string& item : base::SplitList(text)) {
    Require(!item.empty() && item.find(',') == std::string::npos, "items are whole and non-empty");
  }

  const std::string quoted = rpc::Quoted(text);
  for (char c : quoted) {
    Require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "a quoted name prints on one line");
  }
  std::string trust_domain;
  if (absl::StatusOr<rpc::Identity> id = rpc::ParseSpiffeId(text, &trust_domain); id.ok()) {
    Require(id->name.empty() || rpc::IsValidName(id->name), "a parsed name is a valid name");
    absl::StatusOr<std::string> uri = rpc::SpiffeId(trust_domain, *id);
    Require(uri.ok(), "a parsed identity prints");
    std::string again_domain;
    absl::StatusOr<rpc::Identity> again = rpc::ParseSpiffeId(*uri, &again_domain);
    Require(again.ok() && again->role == id->role && again->name == id->name &&
                again_domain == trust_domain,
            "a printed identity parses back the same");
  }
  return 0;
}
