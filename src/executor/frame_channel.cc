// Frames over a socket with deadlines: the host side of the session driver's protocol.
#include "src/executor/frame_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace sbx::executor {
namespace {

uint64_t NowNs() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// What a read adds to a payload at a time: memory follows the bytes the peer really sent.
constexpr size_t kReadChunkBytes = 1 << 20;

uint64_t DeadlineAfter(double seconds) {
  return NowNs() + static_cast<uint64_t>(seconds > 0 ? seconds * 1e9 : 0);
}

}  // namespace

std::string EncodeFrame(std::string_view payload) {
  std::string frame(4, '\0');
  uint32_t size = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((size >> (24 - 8 * i)) & 0xff);
  frame.append(payload);
  return frame;
}

FrameChannel::FrameChannel(int fd, int abort_fd, size_t max_write_bytes, size_t max_read_bytes)
    : fd_(fd), abort_fd_(abort_fd), max_write_bytes_(max_write_bytes), max_read_bytes_(max_read_bytes) {
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

FrameChannel::Status FrameChannel::WaitFor(short events, uint64_t deadline_ns, std::string* why) {
  while (true) {
    uint64_t now = NowNs();
    if (now >= deadline_ns) {
      *why = "no answer before the deadline";
      return Status::kTimedOut;
    }
    struct pollfd fds[2] = {{fd_, events, 0}, {abort_fd_, POLLIN, 0}};
    int wait_ms = static_cast<int>(std::min<uint64_t>((deadline_ns - now) / 1000000 + 1, 60000));
    int ready = ::poll(fds, abort_fd_ >= 0 ? 2 : 1, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      *why = std::string("poll: ") + std::strerror(errno);
      return Status::kIoError;
    }
    // Data already sent by the driver is read even if its sandbox has ended since.
    if (fds[0].revents != 0) return Status::kOk;
    if (abort_fd_ >= 0 && fds[1].revents != 0) {
      *why = "the session ended";
      return Status::kAborted;
    }
  }
}

FrameChannel::Status FrameChannel::WaitReadable(double timeout_seconds, std::string* why) {
  return WaitFor(POLLIN, DeadlineAfter(timeout_seconds), why);
}

FrameChannel::Status FrameChannel::ReadExact(char* data, size_t size, uint64_t deadline_ns,
                                             std::string* why) {
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::recv(fd_, data + done, size - done, 0);
    if (got > 0) {
      done += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      *why = done == 0 ? "the driver closed the channel" : "the driver closed the channel mid-frame";
      return Status::kClosed;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      *why = std::string("recv: ") + std::strerror(errno);
      return Status::kIoError;
    }
    if (Status waited = WaitFor(POLLIN, deadline_ns, why); waited != Status::kOk) return waited;
  }
  return Status::kOk;
}

FrameChannel::Status FrameChannel::Write(std::string_view payload, double timeout_seconds,
                                         std::string* why) {
  if (payload.size() > max_write_bytes_) {
    *why = "a frame of " + std::to_string(payload.size()) + " bytes is over the cap of " +
           std::to_string(max_write_bytes_);
    return Status::kMalformed;
  }
  const uint64_t deadline = DeadlineAfter(timeout_seconds);
  std::string frame = EncodeFrame(payload);
  size_t done = 0;
  while (done < frame.size()) {
    ssize_t sent = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (sent >= 0) {
      done += static_cast<size_t>(sent);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET) {
      *why = "the driver closed the channel";
      return Status::kClosed;
    }
    if (errno != EAGAIN) {
      *why = std::string("send: ") + std::strerror(errno);
      return Status::kIoError;
    }
    if (Status waited = WaitFor(POLLOUT, deadline, why); waited != Status::kOk) return waited;
  }
  return Status::kOk;
}

FrameChannel::Status FrameChannel::Read(std::string* payload, double timeout_seconds,
                                        std::string* why) {
  const uint64_t deadline = DeadlineAfter(timeout_seconds);
  unsigned char header[4];
  Status status = ReadExact(reinterpret_cast<char*>(header), 4, deadline, why);
  if (status != Status::kOk) return status;
  size_t size = (size_t{header[0]} << 24) | (size_t{header[1]} << 16) | (size_t{header[2]} << 8) |
                size_t{header[3]};
  if (size > max_read_bytes_) {
    *why = "the driver announced a frame of " + std::to_string(size) + " bytes, over the cap of " +
           std::to_string(max_read_bytes_);
    return Status::kMalformed;
  }
  payload->clear();
  while (payload->size() < size) {
    const size_t have = payload->size();
    payload->resize(have + std::min(size - have, kReadChunkBytes));
    status = ReadExact(payload->data() + have, payload->size() - have, deadline, why);
    if (status != Status::kOk) {
      std::string().swap(*payload);
      return status;
    }
  }
  return Status::kOk;
}

bool FrameChannel::HasUnreadBytes() const {
  char byte;
  return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

const char* FrameStatusName(FrameChannel::Status status) {
  switch (status) {
    case FrameChannel::Status::kOk: return "ok";
    case FrameChannel::Status::kTimedOut: return "timed_out";
    case FrameChannel::Status::kAborted: return "aborted";
    case FrameChannel::Status::kClosed: return "closed";
    case FrameChannel::Status::kMalformed: return "malformed";
    case FrameChannel::Status::kIoError: return "io_error";
  }
  return "unknown";
}

}  // namespace sbx::executor
