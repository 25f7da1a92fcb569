// Fuzzes the session channel's host side (src/executor/frame_channel.h, session_protocol.h):
// the input is everything a hostile session driver sends on its socket before closing it.
//
// Invariants beyond "no crash":
//   - the frames read, encoded again, are exactly the input's first bytes; none is over the
//     read cap, and the channel ends with kClosed or kMalformed (an announced length over the
//     cap), never a hang or kOk past the input;
//   - a reply accepted by ParseExecReply has an exit code in 0..255 and figures named
//     output/figures/cell-<id>-<n>.png only;
//   - a frame of a streaming block (ParseStreamingFrame) is either such a reply, accepted by
//     ParseExecReply too, or output of stdout or stderr for this request, its text valid UTF-8;
//   - an error names the reply and holds no control byte the driver could use to forge lines.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/executor/frame_channel.h"
#include "src/executor/session_protocol.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using sbx::executor::FrameChannel;

// Small enough for the fuzzer to cross, like the real cap (MaxReplyBytes) is for a driver.
constexpr size_t kReadCap = 16 * 1024;
constexpr int kRequestId = 3;

void CheckMessage(const sbx::Error& error) {
  SBX_FUZZ_CHECK(error.message.starts_with("session driver"));
  for (char c : error.message) SBX_FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
}

void CheckAcceptedReply(const sbx::executor::CodeResult& result) {
  SBX_FUZZ_CHECK(result.exit_code >= 0 && result.exit_code <= 255);
  SBX_FUZZ_CHECK(result.images.size() <= sbx::executor::kMaxReplyFigures);
  for (const std::string& image : result.images) {
    SBX_FUZZ_CHECK(image.starts_with("output/figures/cell-3-") && image.ends_with(".png"));
    const std::string_view number(image.data() + 22, image.size() - 22 - 4);
    SBX_FUZZ_CHECK(!number.empty() && number.find_first_not_of("0123456789") == std::string::npos);
  }
}

// Each byte of `text` starts or continues a UTF-8 sequence of the right length, no overlong,
// surrogate or out-of-range code point among them.
bool IsUtf8(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const size_t length = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xe ? 3 : (byte >> 3) == 0x1e ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    uint32_t point = length == 1 ? byte : byte & (0xff >> (length + 1));
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      point = point << 6 | (next & 0x3f);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < smallest[length] || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

void CheckReply(const std::string& frame) {
  sbx::executor::CodeResult result;
  const auto parsed = sbx::executor::ParseExecReply(frame, kRequestId, "output/figures", result);
  if (!parsed) {
    CheckMessage(parsed.error());
  } else {
    CheckAcceptedReply(result);
  }
  sbx::executor::OutputChunk chunk;
  sbx::executor::CodeResult streamed;
  const auto kind = sbx::executor::ParseStreamingFrame(frame, kRequestId, "output/figures", chunk, streamed);
  if (!kind) return CheckMessage(kind.error());
  if (*kind) {
    SBX_FUZZ_CHECK(parsed);  // the same reply, with or without streaming
    CheckAcceptedReply(streamed);
    return;
  }
  SBX_FUZZ_CHECK(chunk.stream != sbx::executor::OutputChunk::Stream::kIdle);
  SBX_FUZZ_CHECK(IsUtf8(chunk.text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  SBX_FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  // -max_len keeps inputs far below the socket's buffer, so this write never blocks.
  SBX_FUZZ_CHECK(::write(fds[1], data, size) == static_cast<ssize_t>(size));
  ::close(fds[1]);
  FrameChannel channel(fds[0], -1, kReadCap);
  std::string read_back, frame, why;
  FrameChannel::Status status;
  for (size_t index = 0;; ++index) {
    status = channel.Read(&frame, 5, &why);
    if (status != FrameChannel::Status::kOk) break;
    SBX_FUZZ_CHECK(frame.size() <= kReadCap);
    read_back += sbx::executor::EncodeFrame(frame);
    SBX_FUZZ_CHECK(read_back.size() <= size);
    if (index == 0) {
      if (auto ready = sbx::executor::ParseReady(frame); !ready) CheckMessage(ready.error());
    } else {
      CheckReply(frame);
    }
  }
  ::close(fds[0]);
  SBX_FUZZ_CHECK(std::string_view(reinterpret_cast<const char*>(data), read_back.size()) ==
                 read_back);
  const size_t left = size - read_back.size();
  if (status == FrameChannel::Status::kMalformed) {
    SBX_FUZZ_CHECK(left >= 4);
    const uint8_t* header = data + read_back.size();
    const size_t announced =
        size_t{header[0]} << 24 | size_t{header[1]} << 16 | size_t{header[2]} << 8 | header[3];
    SBX_FUZZ_CHECK(announced > kReadCap);
  } else {
    SBX_FUZZ_CHECK(status == FrameChannel::Status::kClosed);
    SBX_FUZZ_CHECK(left < 4 || left - 4 < (size_t{data[read_back.size()]} << 24 |
                                           size_t{data[read_back.size() + 1]} << 16 |
                                           size_t{data[read_back.size() + 2]} << 8 |
                                           data[read_back.size() + 3]));
  }
  return 0;
}
