// Talking to the session driver: requests out, strictly parsed replies in, losses explained.
#include "src/executor/python_session.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "src/executor/session_protocol.h"

namespace sbx::executor {
namespace {

std::string FormatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

uint64_t ElapsedMs(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - since)
                                   .count());
}

// What the driver mirrored of cell `id` to the session's own stream (CELL_MARKER in
// rootfs/session_driver.py): the output of a cell whose session had to be killed.
std::string CellOutputFrom(const std::string& captured, int id) {
  const std::string marker = "\x1esbx-cell " + std::to_string(id) + "\x1e\n";
  size_t at = captured.rfind(marker);
  return at == std::string::npos ? std::string() : captured.substr(at + marker.size());
}

// Slack for the driver's own work around a block (saving figures, encoding the reply): a
// block that ignores its interrupt is killed at timeout + grace + this.
constexpr double kReplySlackSeconds = 2;

}  // namespace

PythonSession::PythonSession(std::unique_ptr<DriverProcess> driver, const SessionConfig& config)
    : driver_(std::move(driver)), config_(config) {}

PythonSession::~PythonSession() { Close(); }

Result<std::unique_ptr<PythonSession>> PythonSession::Start(std::unique_ptr<DriverProcess> driver,
                                                            const SessionConfig& config) {
  std::unique_ptr<PythonSession> session(new PythonSession(std::move(driver), config));
  FrameChannel channel(session->driver_->channel_fd(), session->driver_->ended_fd(), 1 << 16);
  std::string frame, why;
  FrameChannel::Status status = channel.Read(&frame, config.start_timeout_seconds, &why);
  if (status == FrameChannel::Status::kOk) {
    if (auto ready = ParseReady(frame); !ready) {
      session->driver_->Stop();
      session->alive_ = false;
      return ready.error();
    }
    return session;
  }
  session->driver_->Stop();
  session->alive_ = false;
  auto ended = session->driver_->Wait();
  if (!ended) return ended.error().Context("session");
  std::string detail = std::string("the session driver did not start (") + why + "; sandbox " +
                       RunStatusName(ended->status) + ", exit code " + std::to_string(ExitCodeFor(*ended));
  if (!ended->setup_error.empty()) detail += ", " + ended->setup_error;
  if (!ended->stderr_data.empty()) detail += "; stderr: " + ended->stderr_data.substr(0, 2000);
  return MakeError(ErrorCode::kSetupFailed, detail + ")");
}

CodeResult PythonSession::Run(const CodeBlock& block, const OutputSink& sink) {
  CodeResult result;
  auto started = std::chrono::steady_clock::now();
  const int id = next_id_++;
  if (block.source.size() > config_.max_frame_bytes) {
    // Refused before anything is sent: the session and its state are intact.
    result.rejected = true;
    result.exit_code = 125;
    result.notice = "the block was not run: its source is " + std::to_string(block.source.size()) +
                    " bytes, over the limit of " + std::to_string(config_.max_frame_bytes);
    return result;
  }
  FrameChannel channel(driver_->channel_fd(), driver_->ended_fd(), config_.max_frame_bytes,
                       MaxReplyBytes(config_.output_bytes));
  if (channel.HasUnreadBytes()) {
    // The driver answers only what it is asked: bytes waiting before a request were written by
    // the last block's code (a reply forged ahead for this one, say). Nothing of it is read.
    Lose(result, id, "the session sent data before it was asked (written by the previous block's "
                     "code, not the driver), so its replies can no longer be trusted; this block was not run",
         RunStatus::kSignaled);
    return result;
  }
  ExecRequest request{id, block.language, config_.exec_timeout_seconds, config_.output_bytes,
                      config_.figures_dir, static_cast<bool>(sink)};
  std::string why;
  // The source is written while the driver reads it; it takes at most as long as the block may.
  const double send_timeout = config_.exec_timeout_seconds + config_.grace_seconds;
  FrameChannel::Status status = channel.Write(ExecRequestJson(request), send_timeout, &why);
  if (status == FrameChannel::Status::kOk) status = channel.Write(block.source, send_timeout, &why);
  if (status == FrameChannel::Status::kOk) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(
                              config_.exec_timeout_seconds + config_.grace_seconds + kReplySlackSeconds));
    status = ReadReply(channel, id, sink, deadline, result, &why);
  }
  result.wall_ms = ElapsedMs(started);
  if (status == FrameChannel::Status::kTimedOut) {
    result.exit_code = 124;
    Lose(result, id, "the block ignored the timeout's interrupt for " + FormatSeconds(config_.grace_seconds) +
                     ", so the session was killed", RunStatus::kTimedOut);
    return result;
  }
  if (status != FrameChannel::Status::kOk) Lose(result, id, why, RunStatus::kSignaled);
  return result;
}

FrameChannel::Status PythonSession::ReadReply(FrameChannel& channel, int id, const OutputSink& sink,
                                              std::chrono::steady_clock::time_point deadline,
                                              CodeResult& result, std::string* why) {
  uint64_t streamed[2] = {0, 0};
  std::string frame;
  OutputChunk chunk;
  while (true) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return FrameChannel::Status::kTimedOut;
    if (sink) {
      // A frame's bytes are read as one; silence before one is told to the sink.
      const double idle = config_.stream_idle_seconds;
      FrameChannel::Status ready = channel.WaitReadable(std::min(left, idle), why);
      if (ready == FrameChannel::Status::kTimedOut && left > idle) {
        sink(OutputChunk{OutputChunk::Stream::kIdle, {}});
        continue;
      }
      if (ready != FrameChannel::Status::kOk) return ready;
    }
    FrameChannel::Status status = channel.Read(&frame, left, why);
    if (status != FrameChannel::Status::kOk) return status;
    if (!sink) {
      auto parsed = ParseExecReply(frame, id, config_.figures_dir, result);
      if (!parsed) *why = parsed.error().message;
      return parsed ? status : FrameChannel::Status::kMalformed;
    }
    auto parsed = ParseStreamingFrame(frame, id, config_.figures_dir, chunk, result);
    if (!parsed) {
      *why = parsed.error().message;
      return FrameChannel::Status::kMalformed;
    }
    if (*parsed) return status;
    uint64_t& sent = streamed[chunk.stream == OutputChunk::Stream::kStderr ? 1 : 0];
    sent += chunk.text.size();
    if (sent > MaxStreamedTextBytes(config_.output_bytes)) {
      *why = "session driver output frames: more output than the stream's budget of " +
             std::to_string(config_.output_bytes) + " bytes (frames written by the code, not the driver)";
      return FrameChannel::Status::kMalformed;
    }
    sink(chunk);
  }
}

void PythonSession::Lose(CodeResult& result, int id, const std::string& why, RunStatus fallback) {
  alive_ = false;
  driver_->Stop();
  result.state_lost = true;
  auto ended = driver_->Wait();
  RunStatus status = fallback;
  if (ended) {
    ended_network_ = ended->network;
    // The sandbox's own verdict wins where it has one (out of memory, pids, seccomp).
    switch (ended->status) {
      case RunStatus::kOomKilled:
      case RunStatus::kPidsLimit:
      case RunStatus::kSeccompViolation:
        status = ended->status;
        break;
      default:
        break;
    }
    result.peak_memory_bytes = std::max(result.peak_memory_bytes, ended->peak_memory_bytes);
    // What the cell printed before the end, as far as the sandbox's capture kept it; the
    // interleaving of the two streams is not known here, so output is stdout then stderr.
    result.stdout_text = CellOutputFrom(ended->stdout_data, id);
    result.stderr_text = CellOutputFrom(ended->stderr_data, id);
    result.stdout_truncated = ended->stdout_truncated;
    result.stderr_truncated = ended->stderr_truncated;
    result.output = result.stdout_text + result.stderr_text;
    if (status != fallback || result.exit_code == 0) result.exit_code = ExitCodeFor(*ended);
    if (status == RunStatus::kOomKilled) result.exit_code = 137;
  }
  result.status = status;
  std::string what = status == RunStatus::kOomKilled ? "it ran out of memory (the memory limit)"
                     : status == RunStatus::kPidsLimit ? "it hit the process limit"
                     : status == RunStatus::kSeccompViolation ? "it made a forbidden system call"
                                                              : why;
  if (!result.notice.empty()) result.notice += "; ";
  result.notice += "the session ended because " + what +
                   ": its variables and imports are lost, and the next execution starts a fresh "
                   "session (files in the workspace are kept)";
}

bool PythonSession::EndedWhileIdle() const {
  struct pollfd ended = {driver_->ended_fd(), POLLIN, 0};
  return ::poll(&ended, 1, 0) == 1;
}

void PythonSession::Close() {
  if (!driver_) return;
  if (alive_) {
    FrameChannel channel(driver_->channel_fd(), driver_->ended_fd(), 1 << 16);
    std::string why;
    (void)channel.Write(CloseRequestJson(), 1.0, &why);
    std::string ignored;
    (void)channel.Read(&ignored, 1.0, &why);  // returns at EOF once the driver has exited
    alive_ = false;
  }
  driver_->Stop();
  if (auto ended = driver_->Wait(); ended) ended_network_ = ended->network;
}

}  // namespace sbx::executor
