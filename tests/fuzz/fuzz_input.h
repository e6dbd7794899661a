// What the fuzz targets share: how a target reads a stream of messages from the fuzzer's bytes
// (and seeds.cc writes one), the fixed shapes the push and peer targets check streams against, and
// how a target reports a broken invariant.
#ifndef SYNCOPATE_TESTS_FUZZ_FUZZ_INPUT_H_
#define SYNCOPATE_TESTS_FUZZ_FUZZ_INPUT_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "tensor/tensor_spec.h"

namespace syncopate::fuzz {

// More messages than any input of the default maximum length could hold usefully.
inline constexpr size_t kMaxMessages = 4096;

// The messages of a stream, each length-delimited (protobuf's delimited format, as EncodeStream
// writes them), read until the bytes end or a length runs past them: each message's bytes
// unparsed, as they would arrive on the wire.
inline std::vector<std::string> DecodeRawStream(const uint8_t* data, size_t size) {
  std::vector<std::string> stream;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) return stream;
  google::protobuf::io::CodedInputStream coded(data, static_cast<int>(size));
  uint32_t length;
  std::string bytes;
  while (stream.size() < kMaxMessages && coded.ReadVarint32(&length) &&
         coded.ReadString(&bytes, static_cast<int>(std::min<uint32_t>(length, size)))) {
    stream.push_back(std::move(bytes));
  }
  return stream;
}

template <typename Message>
std::string EncodeStream(const std::vector<Message>& stream) {
  std::string bytes;
  google::protobuf::io::StringOutputStream output(&bytes);
  {
    google::protobuf::io::CodedOutputStream coded(&output);
    for (const Message& message : stream) {
      google::protobuf::util::SerializeDelimitedToCodedStream(message, &coded);
    }
  }
  return bytes;
}

// Reads a target's input front to back as the seeds are written (seeds.cc): bytes, little-endian
// 16-bit numbers, strings after a length. Past the end everything reads as zero or empty.
class InputReader {
 public:
  InputReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return used_ == size_; }
  uint8_t Byte() { return empty() ? 0 : data_[used_++]; }
  uint16_t Uint16() {
    const uint8_t low = Byte();
    return static_cast<uint16_t>(low | Byte() << 8);
  }
  std::string Bytes(size_t n) {
    n = std::min(n, size_ - used_);
    std::string bytes(reinterpret_cast<const char*>(data_ + used_), n);
    used_ += n;
    return bytes;
  }
  std::string ShortString() { return Bytes(Byte()); }
  std::string LongString() { return Bytes(Uint16()); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t used_ = 0;
};

// The model the push and peer targets hold: small, so that a stream of several chunks is a short
// input (the seeds cut "big" into chunks of a few values).
inline tensor::TensorMap FuzzModel() {
  return {{"b", std::vector<float>(4, 0.5f)},
          {"big", std::vector<float>(40, -1.0f)},
          {"w", std::vector<float>(12, 2.0f)}};
}

// Protobuf's parse errors (most inputs make one) would flood the output and slow the run.
inline const bool kProtobufQuiet = (google::protobuf::SetLogHandler(nullptr), true);

// A finding: the input broke a rule the code promises, though nothing crashed.
inline void Require(bool holds, const char* rule) {
  if (holds) return;
  std::fprintf(stderr, "fuzz target: broken rule: %s\n", rule);
  std::abort();
}

}  // namespace syncopate::fuzz

#endif  // SYNCOPATE_TESTS_FUZZ_FUZZ_INPUT_H_
