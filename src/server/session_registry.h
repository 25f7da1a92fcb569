// The server's live sessions: creating them (from the warm pool when the policy is the
// server's own, else cold), finding them by id, serving each one's requests one at a time in
// arrival order, ending them on request, when idle too long, or all at once when draining.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "sandbox/policy/policy.h"
#include "sandbox/workspace/manifest.h"
#include "src/executor/executors.h"
#include "src/executor/session_pool.h"

namespace sbx::server {

// A mutex that admits waiters in the order they arrived (a ticket lock): requests to one
// session run in the order the server received them.
class FifoMutex {
 public:
  void lock();
  void unlock();

 private:
  std::mutex mutex_;
  std::condition_variable turn_;
  uint64_t next_ticket_ = 0;
  uint64_t serving_ = 0;
};

struct SessionRequest {
  ValidPolicy policy;        // the server's, or tightened by the request
  bool server_policy = true;  // the policy is exactly the server's (pool eligible)
  std::string image_dir;      // the policy's image, resolved; empty: the server's image
  Manifest manifest;
  double idle_timeout_seconds = 900;
};

class ServerSession {
 public:
  const std::string id;
  const double created;  // unix seconds
  const bool pooled;
  const double idle_timeout_seconds;
  const std::string network;  // "none", "host" or "allowlist"
  const double timeout_seconds;  // of a block, unless a request asks for less
  const std::string image;  // the variant its policy named; empty: the server's image

  ServerSession(std::string id, std::unique_ptr<executor::SessionExecutor> executor, bool pooled,
                double idle_timeout_seconds, std::string network, double timeout_seconds,
                std::string image);

  // Taken by every request that uses the executor, in arrival order.
  FifoMutex& turn() { return turn_; }
  // Only while holding turn(): whether End() has run, and the executor if it has not.
  bool ended() const { return executor_ == nullptr; }
  executor::SessionExecutor& executor() { return *executor_; }
  // Marks a request in progress (busy) and, at its end, the time of last use.
  void BeginRequest();
  void EndRequest(bool counted_execution);
  bool busy() const;
  // The requests holding the session's turn or waiting for it.
  int requests() const;
  double last_used() const;
  uint64_t executions() const;
  // Ends the session: stops a running execution and cancels those of the requests ahead of it
  // (they run nothing), then waits for its turn and closes it.
  void End();

 private:
  FifoMutex turn_;
  std::unique_ptr<executor::SessionExecutor> executor_;
  mutable std::mutex mutex_;
  int active_requests_ = 0;
  double last_used_;
  uint64_t executions_ = 0;
};

struct RegistryOptions {
  ValidPolicy policy;       // the server's
  std::string image_dir;    // empty: the default image
  size_t max_sessions = 32;
  executor::SessionPool* pool = nullptr;  // null: every session starts cold
  double keepalive_seconds = 15;  // a streamed execution's keepalive after this much silence
  // Starts every session id ("PREFIX_s-<hex>"), so a stateless router can send each request to
  // the server (pod) that holds the session; empty: "s-<hex>". Checked by ValidateSessionPrefix.
  std::string session_prefix;
  std::string outer_session_driver;  // isolation "outer": ExecutorOptions::outer_session_driver
};

// A session prefix: 1-63 of a-z, 0-9, '-' and '.', starting and ending with a letter or digit
// (a Kubernetes pod name fits). Never '_', which separates it from the rest of the id. `source`
// names where it came from in the error (the flag or the environment variable).
Result<void> ValidateSessionPrefix(const std::string& prefix, const std::string& source);

class SessionRegistry {
 public:
  explicit SessionRegistry(RegistryOptions options);
  ~SessionRegistry();

  // Errors: kUnavailable with err_no EAGAIN when full (the caller answers 429); others from
  // the executor.
  Result<std::shared_ptr<ServerSession>> Create(SessionRequest request);
  std::shared_ptr<ServerSession> Find(const std::string& id) const;
  // Removes and ends the session; null if there is none.
  std::shared_ptr<ServerSession> End(const std::string& id);
  std::vector<std::shared_ptr<ServerSession>> List() const;
  size_t size() const;
  size_t max_sessions() const { return options_.max_sessions; }
  // Stops creating, and ends every session.
  void EndAll();

 private:
  void ReapLoop();

  RegistryOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable stop_reaper_;
  std::map<std::string, std::shared_ptr<ServerSession>> sessions_;
  size_t reserved_ = 0;  // slots of sessions being created
  bool closed_ = false;
  std::thread reaper_;
};

double NowSeconds();

}  // namespace sbx::server
