// One live session driver and the conversation with it: start, run a block, close.
//
// Usage:
//   auto session = PythonSession::Start(std::move(driver), config);   // waits for "ready"
//   CodeResult r = (*session)->Run({"python", "x = 1"});               // state persists
//   if (!(*session)->alive()) ...  // it was lost: r.state_lost and r.notice say why
//
// A block that outlives its timeout is interrupted by the driver (KeyboardInterrupt-like);
// if no reply arrives within the grace period after that, the whole sandbox is stopped and
// the result says the state was lost. A sandbox that ends on its own (out of memory, a
// crash, the pids limit) ends the session the same way, with the sandbox's status.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "src/executor/code_executor.h"
#include "src/executor/driver_process.h"
#include "src/executor/frame_channel.h"

namespace sbx::executor {

struct SessionConfig {
  double start_timeout_seconds = 30;
  double exec_timeout_seconds = 60;  // per block
  double grace_seconds = 2;          // after the timeout, before the sandbox is stopped
  uint64_t output_bytes = 1 << 20;   // per stream
  std::string figures_dir = "output/figures";
  size_t max_frame_bytes = 256u << 20;  // sources up to this size (replies: MaxReplyBytes)
  double stream_idle_seconds = 15;      // a streaming Run tells its sink of a silence this long
};

class PythonSession {
 public:
  static Result<std::unique_ptr<PythonSession>> Start(std::unique_ptr<DriverProcess> driver,
                                                      const SessionConfig& config);
  ~PythonSession();

  // Runs one block (the language was validated by the caller). With a sink, the block's output
  // also reaches it as it is written, before Run returns.
  CodeResult Run(const CodeBlock& block, const OutputSink& sink = {});
  bool alive() const { return alive_; }
  // The sandbox ended between requests (the driver's idle timeout, the session's lifetime).
  bool EndedWhileIdle() const;
  // Asks the driver to exit, then stops whatever is left. Idempotent.
  void Close();
  // Makes the driver exit without waiting for it (Close() or the destructor then waits).
  void Hangup() { driver_->Hangup(); }
  // Starts killing the whole sandbox, from any thread: a Run in progress returns with the
  // session lost.
  void Kill() { driver_->Kill(); }
  // The timeout of each block from the next Run on.
  void set_exec_timeout_seconds(double seconds) { config_.exec_timeout_seconds = seconds; }
  // Once the session has ended (Close(), or an execution that lost it): what the network
  // policy did over its whole life, the sandbox's own summary with the finished log's digest.
  const std::optional<NetworkOutcome>& ended_network() const { return ended_network_; }

 private:
  PythonSession(std::unique_ptr<DriverProcess> driver, const SessionConfig& config);
  // Stops the sandbox and fills the result's status, state_lost and notice from how it ended.
  void Lose(CodeResult& result, int id, const std::string& why, RunStatus fallback);
  // Reads frames until the reply to request `id`, handing output frames to `sink` (which is
  // set only when the request asked for them). The deadline is the whole block's, however
  // many frames arrive. An Error is a reply or output frame the driver could not have sent.
  FrameChannel::Status ReadReply(FrameChannel& channel, int id, const OutputSink& sink,
                                 std::chrono::steady_clock::time_point deadline, CodeResult& result,
                                 std::string* why);

  std::unique_ptr<DriverProcess> driver_;
  SessionConfig config_;
  int next_id_ = 1;
  bool alive_ = true;
  std::optional<NetworkOutcome> ended_network_;
};

}  // namespace sbx::executor
