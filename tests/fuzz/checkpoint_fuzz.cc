// libFuzzer target: a store shard's checkpoint file, read at every start (ParseCheckpoint), and the
// table it is restored into (ParameterTable::Restore). Input: one byte, then a file's bytes. With
// the byte odd the target appends the right checksum first, so that mutations reach past it into
// the fields. Beyond not crashing: a checkpoint the table restores writes back into a checkpoint
// that reads as the same model.

#include <algorithm>
#include <cstring>
#include <utility>

#include "fuzz_input.h"
#include "store/checkpoint.h"

namespace syncopate::fuzz {
namespace {

// A model's tensors in name order (a table keeps them so), each with its values' bytes.
std::vector<std::pair<tensor::TensorSpec, std::string>> ByName(const store::ModelSnapshot& model) {
  std::vector<std::pair<tensor::TensorSpec, std::string>> tensors;
  for (size_t i = 0; i < model.specs.size(); ++i) {
    const std::vector<float>& values = model.tensor(i);
    tensors.emplace_back(model.specs[i], std::string(reinterpret_cast<const char*>(values.data()),
                                                     values.size() * sizeof(float)));
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const auto& a, const auto& b) { return a.first.name < b.first.name; });
  return tensors;
}

}  // namespace
}  // namespace syncopate::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace syncopate;
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) bytes = store::SealCheckpoint(std::move(bytes));
  absl::StatusOr<store::ShardCheckpoint> read = store::ParseCheckpoint(bytes, "fuzz", 0, 1);
  if (!read.ok()) return 0;
  store::ParameterTable table;
  if (!table.Restore(read->state).ok()) return 0;
  absl::StatusOr<std::string> written =
      store::EncodeCheckpoint({table.Durable(), read->written}, 0, 1);
  fuzz::Require(written.ok(), "a restored table writes a checkpoint");
  absl::StatusOr<store::ShardCheckpoint> again = store::ParseCheckpoint(*written, "again", 0, 1);
  fuzz::Require(again.ok(), "a written checkpoint reads back");
  fuzz::Require(fuzz::ByName(*again->state.model) == fuzz::ByName(*read->state.model),
                "the model reads back as it was restored");
  return 0;
}
