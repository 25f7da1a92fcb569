// Length-prefixed frames over a stream socket (4-byte big-endian length, then the bytes), with
// a deadline on every read and write, a size cap, and an abort fd that ends a wait at once.
//
// The session driver (rootfs/session_driver.py) is the peer. It runs untrusted code in the
// same process, so everything read here is hostile: an oversized length, a short frame, a
// peer that stops mid-frame or never answers all end in a Status, never a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sbx::executor {

// The 4-byte header and the payload as one buffer.
std::string EncodeFrame(std::string_view payload);

class FrameChannel {
 public:
  enum class Status {
    kOk,
    kTimedOut,   // the deadline passed
    kAborted,    // abort_fd became readable (the session's sandbox ended)
    kClosed,     // the peer closed the socket (between or inside a frame)
    kMalformed,  // a frame over the cap
    kIoError,
  };

  // `fd` is made non-blocking; neither fd is owned. `abort_fd` may be -1. Frames written may
  // be up to `max_write_bytes`, frames read up to `max_read_bytes` (a session sends sources
  // far larger than any reply it may get back).
  FrameChannel(int fd, int abort_fd, size_t max_write_bytes, size_t max_read_bytes);
  FrameChannel(int fd, int abort_fd, size_t max_frame_bytes)
      : FrameChannel(fd, abort_fd, max_frame_bytes, max_frame_bytes) {}

  Status Write(std::string_view payload, double timeout_seconds, std::string* why);
  // The payload grows as its bytes arrive, so an announced length costs nothing until sent.
  Status Read(std::string* payload, double timeout_seconds, std::string* why);
  // kOk once the peer has sent a byte to read (or closed), kTimedOut, kAborted or kIoError.
  Status WaitReadable(double timeout_seconds, std::string* why);
  // True when the peer has sent bytes nobody asked for yet (between requests: a forged or
  // queued-ahead reply).
  bool HasUnreadBytes() const;

 private:
  // Waits for `events` on fd_ until the deadline; kOk when ready.
  Status WaitFor(short events, uint64_t deadline_ns, std::string* why);
  Status ReadExact(char* data, size_t size, uint64_t deadline_ns, std::string* why);

  int fd_;
  int abort_fd_;
  size_t max_write_bytes_;
  size_t max_read_bytes_;
};

const char* FrameStatusName(FrameChannel::Status status);

}  // namespace sbx::executor
