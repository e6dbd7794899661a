#include "store/push_assembler.h"

#include <limits>

#include "gtest/gtest.h"
#include "store/test_pushes.h"

namespace syncopate::store {
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

}  // namespace
}  // namespace syncopate::store
