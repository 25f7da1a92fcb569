// The three CodeExecutors.
//
//   SessionExecutor  one sandbox that lives across Execute calls: Python variables, imports
//                    and files persist, like a notebook. Memory and pids limits hold for the
//                    session as a whole; a session lost to a timeout, OOM or crash is
//                    replaced by a fresh one at the next call, and the result says so.
//   SandboxExecutor  a fresh sandbox (and, unless a workspace is given, a fresh workspace)
//                    per Execute call: nothing carries over.
//   LocalExecutor    NO ISOLATION, for development only: the driver runs on the host as the
//                    caller, in the workspace directory. It warns when created, its Name()
//                    says so, and it still never passes the caller's environment.
//
// Usage:
//   ExecutorOptions options;                 // policy, image, workspace, manifest
//   options.manifest.AddHostFile("data.csv", "/srv/data.csv");
//   auto session = SessionExecutor::Create(std::move(options));
//   auto r = (*session)->Execute({{"python", "import pandas as pd\ndf = pd.read_csv('data.csv')"}});
//   (*session)->CopyOutputs({"report.md", "output/figures"}, "/srv/out");   // ends the session
//
// Cancelling one execution from another thread (a server whose client hung up):
//   CancelToken cancel;  // one per execution; outlives it and every Cancel(cancel)
//   // on the watching thread, whenever the client hangs up: (*session)->Cancel(cancel);
//   auto r = (*session)->ExecuteStreaming(blocks, sink, &cancel);  // kCancelled if it came
//
// Policy: limits.timeout_seconds is the timeout of one block; the session's sandbox itself
// lives at most `session_max_seconds` and ends after `session_idle_seconds` without a request.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/cgroup/cgroup.h"
#include "sandbox/launch/outer_run.h"
#include "sandbox/policy/policy.h"
#include "sandbox/workspace/copy_out.h"
#include "sandbox/workspace/manifest.h"
#include "sandbox/workspace/workspace.h"
#include "sandbox/workspace/workspace_archive.h"
#include "src/executor/code_executor.h"
#include "src/executor/python_session.h"

namespace sbx::executor {

struct ExecutorOptions {
  ValidPolicy policy;  // checked once where it was made; not here again
  std::string image_dir;      // an image directory; empty: `image`
  std::string image;          // a variant's name (`sbx image build --name`); empty: policy.image
  std::string workspace_dir;  // empty: a temporary workspace, removed with the executor
  Manifest manifest;          // staged into the workspace before the first execution
  double session_idle_seconds = 900;
  double session_max_seconds = 24 * 3600;
  double grace_seconds = 2;   // after a block's timeout, before the session is killed
  std::string figures_dir = "output/figures";
  double stream_idle_seconds = 15;  // ExecuteStreaming: an idle chunk after this much silence
  CgroupOptions cgroup_options;
  // Network allowlist: each session's audit log goes to <dir>/network-<n>.jsonl. Empty: a new
  // directory /tmp/sbx-network-XXXXXX, kept afterwards (the logs are the run's record).
  std::string network_log_dir;
  // Isolation "outer" (policy.isolation): there is no image, so the session driver is read from
  // the container's own root file system, here ("": kSessionDriverPath).
  std::string outer_session_driver;
};

// One execution's cancellation, set from any thread by SessionExecutor::Cancel(token) at any
// time: before the execution starts (it then runs nothing), while it runs (its session is
// killed), or after it has returned (nothing happens: a later execution has a token of its own).
// Use each token for one execution; it must outlive that execution and every Cancel(token).
class CancelToken {
 public:
  bool cancelled() const { return cancelled_; }

 private:
  friend class SessionExecutor;
  std::atomic<bool> cancelled_{false};
};

class SessionExecutor : public CodeExecutor {
 public:
  static Result<std::unique_ptr<SessionExecutor>> Create(ExecutorOptions options);
  ~SessionExecutor() override;

  Result<CodeResult> Execute(const std::vector<CodeBlock>& blocks) final;
  // Execute, with each block's output also handed to `sink` as it is written. `cancel` (may be
  // null) is this execution's token: once Cancel(*cancel) has run, before or during it, the
  // execution returns kCancelled.
  virtual Result<CodeResult> ExecuteStreaming(const std::vector<CodeBlock>& blocks,
                                              const OutputSink& sink, CancelToken* cancel);
  std::string Name() const override { return "session"; }

  // End the session (its processes are all dead when these run), then copy declared outputs
  // to `host_dir` / write the workspace as a tar. The next Execute starts a fresh session.
  // `reserved`: paths under host_dir never replaced (CopyOutBudgets::reserved).
  Result<CopyOutResult> CopyOutputs(const std::vector<std::string>& requests, const std::string& host_dir,
                                    const std::vector<std::string>& reserved = {});
  Result<ArchiveReport> PersistWorkspace(const std::string& archive_path);
  // Ends the session; nothing is left running. Idempotent.
  virtual void Close();
  // Cancelling, callable from any thread while an execution runs on another (none of them
  // waits for it to return). An execution cancelled before it starts runs nothing: it returns
  // kCancelled, its notice says nothing was run, and the session lives on. One cancelled while
  // it runs has its session's processes killed: it returns kCancelled with its state lost (the
  // next starts a fresh session).
  //
  // Cancel(token): the execution given `token`, whether it has started, runs now or has
  // returned (then nothing happens).
  void Cancel(CancelToken& token);
  // The execution running now, if any; between executions nothing happens.
  void Cancel();
  // The execution running now and every later one, for an executor about to be closed for
  // good (a server session being ended): each returns kCancelled and runs nothing.
  void CancelFromNowOn();
  // The timeout of each block from the next execution on (policy.limits.timeout_seconds).
  void SetBlockTimeout(double seconds);
  // Runs the blocks, then ends the session, so the result also carries the finished network
  // log's coverage and digest (what SandboxExecutor returns).
  Result<CodeResult> ExecuteThenClose(const std::vector<CodeBlock>& blocks);
  const std::string& workspace_dir() const { return workspace_.path; }
  int workspace_fd() const { return workspace_.fd.get(); }  // O_PATH, held for the session
  // Network allowlist: the summary of every session that has ended, oldest first, each with
  // its log's path and SHA-256 (the record an auditor checks the log file against).
  const std::vector<NetworkOutcome>& EndedNetworks() const { return ended_networks_; }

 protected:
  explicit SessionExecutor(ExecutorOptions options);
  Result<void> Prepare(bool local);
  Result<void> PrepareOuter();
  virtual Result<std::unique_ptr<DriverProcess>> StartDriver();
  Result<std::string> NetworkLogDir();
  // ExecuteStreaming's work once `token` is registered as the running execution's.
  Result<CodeResult> RunBlocks(const std::vector<CodeBlock>& blocks, const OutputSink& sink,
                               const CancelToken& token);
  // Cancels `token`'s execution; the caller holds session_mutex_.
  void CancelLocked(CancelToken& token);
  // Closes and drops the session, keeping its network summary.
  void EndSession();
  // The network fields of `result`: the mode, what the log recorded since the last read, and
  // once the session has ended its coverage and digest.
  void ReadNetwork(CodeResult& result);
  // Only what the log recorded since the last read (names, counts, the log's path).
  void ReadNetworkRecords(CodeResult& result);
  // "none", "host" (LocalExecutor) or "allowlist": CodeResult::network_mode.
  std::string NetworkModeLabel() const;

  ExecutorOptions options_;
  // Isolation "outer" without a given workspace: the private area holding it (removed last).
  std::optional<OuterArea> outer_area_;
  Workspace workspace_;
  std::string image_dir_;
  std::unique_ptr<PythonSession> session_;
  // Held while session_ is replaced or dropped or running_cancel_ changes, and by the Cancel
  // calls (the only cross-thread callers).
  std::mutex session_mutex_;
  CancelToken* running_cancel_ = nullptr;  // the running execution's; under session_mutex_
  bool cancelled_from_now_on_ = false;     // CancelFromNowOn; under session_mutex_
  std::string pending_notice_;  // why the previous session ended, told with the next result
  // The current session's network audit log and how far its executions have read it.
  std::string network_log_path_;
  uint64_t network_log_offset_ = 0;
  int sessions_started_ = 0;
  std::vector<NetworkOutcome> ended_networks_;
  bool local_ = false;
  // Each block's timeout: the policy's, until SetBlockTimeout.
  double block_timeout_seconds_ = 0;
};

class LocalExecutor final : public SessionExecutor {
 public:
  // Warns on stderr. options.workspace_dir is required (there is no sandbox to make one).
  static Result<std::unique_ptr<LocalExecutor>> Create(ExecutorOptions options);
  std::string Name() const override { return "local (NO ISOLATION)"; }

 private:
  explicit LocalExecutor(ExecutorOptions options) : SessionExecutor(std::move(options)) {}
  Result<std::unique_ptr<DriverProcess>> StartDriver() override;
};

class SandboxExecutor final : public CodeExecutor {
 public:
  static Result<std::unique_ptr<SandboxExecutor>> Create(ExecutorOptions options);
  Result<CodeResult> Execute(const std::vector<CodeBlock>& blocks) override;
  std::string Name() const override { return "sandbox"; }

 private:
  explicit SandboxExecutor(ExecutorOptions options) : options_(std::move(options)) {}
  ExecutorOptions options_;
};

// Where the session driver lives inside the image.
inline constexpr const char* kSessionDriverPath = "/usr/lib/sbx/session_driver.py";

}  // namespace sbx::executor
