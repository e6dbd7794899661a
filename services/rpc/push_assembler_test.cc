#include "rpc/push_assembler.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"
#include "rpc/byte_buffer_testing.h"
#include "rpc/chunk_frames.h"
#include "rpc/test_pushes.h"

namespace syncopate::rpc {
namespace {

using testing::Header;
using testing::PushStream;

SpecLookup Holds(const std::string& name, int64_t n) {
  return [=](const std::string& asked) -> std::optional<tensor::TensorSpec> {
    if (asked != name) return std::nullopt;
    return tensor::TensorSpec{name, {n}};
  };
}

absl::Status Feed(PushAssembler& a, std::vector<v1::PushMessage> stream) {
  for (auto& m : stream) {
    absl::Status s = a.Add(m);
    if (!s.ok()) return s;
  }
  return a.Finish().status();
}

TEST(PushAssembler, AcceptsAWholeStreamInManyChunks) {
  PushAssembler a(Holds("w", 100000));
  auto stream = PushStream(Header(1, 1, 1), {{"w", std::vector<float>(100000, 0.5f)}});
  ASSERT_GT(stream.size(), 3u);
  for (auto& m : stream) ASSERT_TRUE(a.Add(m).ok());
  absl::StatusOr<StagedPush> push = a.Finish();
  ASSERT_TRUE(push.ok());
  EXPECT_EQ(push->payload_bytes, 400000u);
  EXPECT_EQ(push->header.trainer_id(), 1u);
}

TEST(PushAssembler, RejectsUnknownTensorAndWrongLength) {
  PushAssembler unknown(Holds("w", 4));
  EXPECT_EQ(Feed(unknown, PushStream(Header(1, 1, 1), {{"v", {1, 2, 3, 4}}})).code(),
            absl::StatusCode::kNotFound);
  PushAssembler wrong(Holds("w", 4));
  EXPECT_EQ(Feed(wrong, PushStream(Header(1, 1, 1), {{"w", {1, 2, 3}}})).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PushAssembler, RejectsNanAndInf) {
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    PushAssembler a(Holds("w", 3));
    EXPECT_EQ(Feed(a, PushStream(Header(1, 1, 1), {{"w", {1, bad, 3}}})).code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(PushAssembler, RejectsTruncatedStream) {
  PushAssembler a(Holds("w", 100000));
  auto stream = PushStream(Header(1, 1, 1), {{"w", std::vector<float>(100000, 1.0f)}});
  stream.pop_back();
  EXPECT_EQ(Feed(a, std::move(stream)).code(), absl::StatusCode::kInvalidArgument);
}

TEST(PushAssembler, RejectsChunkBeforeHeaderOutOfOrderAndSecondHeader) {
  auto stream = PushStream(Header(1, 1, 1), {{"w", std::vector<float>(100000, 1.0f)}});
  PushAssembler no_header(Holds("w", 100000));
  EXPECT_FALSE(no_header.Add(stream[1]).ok());

  PushAssembler swapped(Holds("w", 100000));
  std::swap(stream[1], stream[2]);
  EXPECT_EQ(Feed(swapped, stream).code(), absl::StatusCode::kInvalidArgument);

  PushAssembler twice(Holds("w", 100000));
  ASSERT_TRUE(twice.Add(stream[0]).ok());
  EXPECT_FALSE(twice.Add(stream[0]).ok());

  PushAssembler empty;
  EXPECT_FALSE(empty.Finish().ok());
}

TEST(PushAssembler, RejectsRaggedBytes) {
  PushAssembler a(Holds("w", 4));
  auto stream = PushStream(Header(1, 1, 1), {{"w", {1, 2, 3, 4}}});
  stream[1].mutable_chunk()->mutable_data()->pop_back();
  EXPECT_EQ(Feed(a, stream).code(), absl::StatusCode::kInvalidArgument);
}

// A stream's messages as a receiver's raw buffers, cut into slices at odd places.
absl::Status FeedRaw(PushAssembler& a, const std::vector<v1::PushMessage>& stream, size_t every) {
  for (const v1::PushMessage& m : stream) {
    RETURN_IF_ERROR(a.Add(rpc::testing::Cut(m.SerializeAsString(), 3, every)));
  }
  return absl::OkStatus();
}

// The values a staged push carries, per tensor.
tensor::TensorMap Values(const StagedPush& push) {
  tensor::TensorMap out;
  for (const tensor::TensorSpec& spec : push.tensors) out[spec.name].resize(spec.NumElements());
  for (const StagedChunk& chunk : push.chunks) {
    chunk.payload.CopyTo(
        reinterpret_cast<char*>(out[push.tensors[chunk.tensor_index].name].data() + chunk.offset));
  }
  return out;
}

TEST(PushAssembler, RawMessagesStageWhatParsedOnesDo) {
  std::vector<float> w(70000), b(33);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 1000) * 0.001f - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = -static_cast<float>(i);
  const tensor::TensorMap model{{"w", w}, {"b", b}};
  auto stream = PushStream(Header(4, 2, 9), model);
  auto lookup = [&](const std::string& name) -> std::optional<tensor::TensorSpec> {
    auto it = model.find(name);
    if (it == model.end()) return std::nullopt;
    return tensor::TensorSpec{name, {static_cast<int64_t>(it->second.size())}};
  };
  // Small payloads copied out (the default) or every payload left in the slices.
  for (size_t copy_below : {rpc::kCopyKeptPayloadsBelow, size_t{0}}) {
    for (size_t every : {7, 4093, 16384}) {
      SCOPED_TRACE(absl::StrCat("copy below ", copy_below, ", slices of ", every));
      PushAssembler raw(lookup, copy_below);
      ASSERT_TRUE(FeedRaw(raw, stream, every).ok());
      absl::StatusOr<StagedPush> push = raw.Finish();
      ASSERT_TRUE(push.ok()) << push.status();
      EXPECT_EQ(Values(*push), model);
      EXPECT_EQ(push->payload_bytes, (w.size() + b.size()) * sizeof(float));
      EXPECT_EQ(push->max_magnitude, 32.0f);
      EXPECT_EQ(push->header.trainer_id(), 4u);
      EXPECT_EQ(push->header.sequence(), 9u);
    }
  }
}

TEST(PushAssembler, ARawChunkNamesANonFiniteValueAsAParsedOneDoes) {
  // In the first chunk (64 KiB: left in the slices), and in the second (small: copied).
  for (size_t bad : {12345, 17000}) {
    std::vector<float> w(20000, 1.0f);
    w[bad] = std::numeric_limits<float>::infinity();
    const auto stream = PushStream(Header(1, 1, 1), {{"w", w}});
    PushAssembler parsed(Holds("w", 20000));
    const absl::Status want = Feed(parsed, stream);
    ASSERT_EQ(want.code(), absl::StatusCode::kInvalidArgument);
    const size_t in_chunk = bad % (tensor::kMinChunkBytes / sizeof(float));
    EXPECT_NE(want.message().find(absl::StrCat("at element ", in_chunk)), std::string::npos)
        << want;
    for (size_t every : {5, 6, 7, 64}) {  // the value split between slices, or not
      PushAssembler raw(Holds("w", 20000));
      EXPECT_EQ(FeedRaw(raw, stream, every), want) << every;
    }
  }
}

TEST(PushAssembler, RefusesMalformedAndEmptyRawMessages) {
  PushAssembler malformed;
  const absl::Status refused = malformed.Add(rpc::testing::Cut(std::string("\x0a\x7f", 2), 1, 1));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("malformed push message"), std::string::npos) << refused;
  PushAssembler empty;
  const absl::Status none = empty.Add(rpc::EncodeMessage(v1::PushMessage()));
  EXPECT_EQ(none, absl::InvalidArgumentError("empty push message"));
}

}  // namespace
}  // namespace syncopate::rpc
