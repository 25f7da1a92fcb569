// SessionExecutor, LocalExecutor and SandboxExecutor: workspaces, sessions and results.
#include "src/executor/executors.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/remove_tree.h"
#include "sandbox/image/image.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/launcher.h"
#include "sandbox/net/network_log.h"
#include "src/executor/workspace_changes.h"

namespace sbx::executor {
namespace {

std::string SecondsArg(double seconds) { return std::to_string(seconds); }

// Adds one block's result to the call's: output accumulates, the ending is the last block's.
void Merge(CodeResult& total, CodeResult&& block) {
  total.status = block.status;
  total.exit_code = block.exit_code;
  total.output += block.output;
  total.stdout_text += block.stdout_text;
  total.stderr_text += block.stderr_text;
  total.stdout_truncated = total.stdout_truncated || block.stdout_truncated;
  total.stderr_truncated = total.stderr_truncated || block.stderr_truncated;
  total.output_truncated = total.output_truncated || block.output_truncated;
  total.value = std::move(block.value);
  total.error = std::move(block.error);
  total.wall_ms += block.wall_ms;
  total.cpu_ms += block.cpu_ms;
  total.peak_memory_bytes = std::max(total.peak_memory_bytes, block.peak_memory_bytes);
  for (std::string& image : block.images) total.images.push_back(std::move(image));
  total.state_lost = total.state_lost || block.state_lost;
  total.rejected = total.rejected || block.rejected;
  if (!block.notice.empty()) total.notice += (total.notice.empty() ? "" : "; ") + block.notice;
}

// A call refused before anything ran.
CodeResult Rejected(const Error& error, std::string network_mode) {
  CodeResult rejected;
  rejected.network_mode = std::move(network_mode);
  rejected.rejected = true;
  rejected.exit_code = 125;
  rejected.notice = "nothing was run: " + error.message;
  return rejected;
}

// A call cancelled before anything ran: the session, if any, lives on.
CodeResult NothingRun(CodeResult result, std::string network_mode) {
  result.network_mode = std::move(network_mode);
  result.status = RunStatus::kCancelled;
  RunResult as_run;
  as_run.status = RunStatus::kCancelled;
  result.exit_code = ExitCodeFor(as_run);
  result.notice = "nothing was run: the execution was cancelled before it started";
  return result;
}

}  // namespace

Result<void> ValidateBlocks(const std::vector<CodeBlock>& blocks) {
  if (blocks.empty()) return InvalidInput("no code blocks to run; pass at least one");
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string& language = blocks[i].language;
    if (language != "python" && language != "bash" && language != "sh") {
      return InvalidInput("block " + std::to_string(i) + ": unknown language \"" + language +
                          "\"; use python, bash or sh");
    }
  }
  return {};
}

SessionExecutor::SessionExecutor(ExecutorOptions options)
    : options_(std::move(options)), block_timeout_seconds_(options_.policy->limits.timeout_seconds) {}

SessionExecutor::~SessionExecutor() {
  Close();
  if (workspace_.temporary && !workspace_.path.empty()) (void)RemoveTree(workspace_.path);
}

Result<void> SessionExecutor::Prepare(bool local) {
  local_ = local;
  SBX_TRY(ValidateManifest(options_.manifest));
  if (options_.session_idle_seconds < 0 || options_.session_max_seconds < LimitRanges::kMinTimeout ||
      options_.session_max_seconds > LimitRanges::kMaxTimeout) {
    return InvalidInput("session_idle_seconds must be >= 0 and session_max_seconds within 0.01 s..7 days");
  }
  if (!options_.image_dir.empty() && !options_.image.empty()) {
    return InvalidInput("image: give image (a name) or image_dir (a directory), not both");
  }
  const bool outer = options_.policy->isolation == Isolation::kOuter;
  if (outer) return PrepareOuter();
  // The options' image wins over the policy's (ValidatePolicy checked that name).
  const std::string& image = options_.image.empty() ? options_.policy->image : options_.image;
  if (!options_.image.empty()) SBX_TRY(ValidateImageName(options_.image));
  SBX_ASSIGN_OR_RETURN(auto image_dir,
                       options_.image_dir.empty() ? ResolveImageDir(image) : options_.image_dir);
  image_dir_ = image_dir;
  FileOwner owner{::geteuid(), ::getegid()};
  if (!local) {
    SBX_ASSIGN_OR_RETURN(auto mapping, ComputeIdMapping(::geteuid(), ::getegid()));
    owner = FileOwner{mapping.host_uid, mapping.host_gid};
  }
  if (!options_.workspace_dir.empty()) {
    SBX_ASSIGN_OR_RETURN(auto opened, OpenWorkspace(options_.workspace_dir));
    workspace_ = std::move(opened);
  } else if (local) {
    return InvalidInput("LocalExecutor: workspace_dir is required (there is no sandbox to make one)");
  } else {
    SBX_ASSIGN_OR_RETURN(auto created, CreateTemporaryWorkspace(owner.uid, owner.gid));
    workspace_ = std::move(created);
  }
  auto staged = StageManifestAt(workspace_.fd.get(), options_.manifest, owner);
  if (!staged) return staged.error().Context("manifest");
  return {};
}

// Isolation "outer": no image; the workspace given, or one in a private area that uid 1000
// reaches by its path too (the driver returns to it by name), owned by uid 1000.
Result<void> SessionExecutor::PrepareOuter() {
  if (local_) return InvalidInput("isolation: \"outer\" is a sandboxed run, not a LocalExecutor");
  if (!options_.image_dir.empty() || !options_.image.empty()) {
    return InvalidInput("image: isolation \"outer\" runs the container's own root file system, "
                        "not an image; drop image and image_dir");
  }
  SBX_TRY(CheckOuterRunner());
  if (!options_.workspace_dir.empty()) {
    SBX_ASSIGN_OR_RETURN(auto opened, OpenWorkspace(options_.workspace_dir));
    workspace_ = std::move(opened);
  } else {
    SBX_ASSIGN_OR_RETURN(auto area, OuterArea::Create(/*with_workspace=*/true));
    outer_area_.emplace(std::move(area));
    workspace_ = outer_area_->ReleaseWorkspace();
  }
  auto staged = StageManifestAt(workspace_.fd.get(), options_.manifest, FileOwner{kSandboxId, kSandboxId});
  if (!staged) return staged.error().Context("manifest");
  return {};
}

Result<std::unique_ptr<SessionExecutor>> SessionExecutor::Create(ExecutorOptions options) {
  std::unique_ptr<SessionExecutor> executor(new SessionExecutor(std::move(options)));
  SBX_TRY(executor->Prepare(/*local=*/false));
  return executor;
}

Result<std::string> SessionExecutor::NetworkLogDir() {
  if (options_.network_log_dir.empty()) {
    char dir[] = "/tmp/sbx-network-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return SysError(ErrorCode::kSetupFailed, "mkdtemp(/tmp/sbx-network-XXXXXX)");
    options_.network_log_dir = dir;
  }
  return options_.network_log_dir;
}

Result<std::unique_ptr<DriverProcess>> SessionExecutor::StartDriver() {
  RunSpec spec;
  Policy session_policy = options_.policy.get();
  session_policy.limits.timeout_seconds = options_.session_max_seconds;  // in range: Prepare
  SBX_ASSIGN_OR_RETURN(spec.policy, ValidPolicy::Check(std::move(session_policy)));
  const bool outer_driver = options_.policy->isolation == Isolation::kOuter &&
                            !options_.outer_session_driver.empty();
  spec.argv = {"/usr/bin/python3", outer_driver ? options_.outer_session_driver : kSessionDriverPath,
               SecondsArg(options_.session_idle_seconds)};
  spec.image_dir = image_dir_;
  spec.held_workspace = &workspace_;
  spec.cgroup_options = options_.cgroup_options;
  if (spec.policy->network == NetworkMode::kAllowlist) {
    SBX_ASSIGN_OR_RETURN(auto dir, NetworkLogDir());
    // A directory reused across runs (an agent's --out-dir) keeps the older logs.
    do {
      network_log_path_ = dir + "/network-" + std::to_string(++sessions_started_) + ".jsonl";
    } while (::access(network_log_path_.c_str(), F_OK) == 0);
    network_log_offset_ = 0;
    spec.network_log_path = network_log_path_;
  }
  return StartSandboxedDriver(std::move(spec));
}

Result<CodeResult> SessionExecutor::Execute(const std::vector<CodeBlock>& blocks) {
  return ExecuteStreaming(blocks, {}, nullptr);
}

Result<CodeResult> SessionExecutor::ExecuteStreaming(const std::vector<CodeBlock>& blocks,
                                                     const OutputSink& sink, CancelToken* cancel) {
  if (auto valid = ValidateBlocks(blocks); !valid) return Rejected(valid.error(), NetworkModeLabel());
  CancelToken own;
  CancelToken& token = cancel != nullptr ? *cancel : own;
  {
    // Checked and registered at once: a cancel before this point killed nothing.
    std::lock_guard lock(session_mutex_);
    if (cancelled_from_now_on_) token.cancelled_ = true;
    if (token.cancelled()) return NothingRun({}, NetworkModeLabel());
    running_cancel_ = &token;
  }
  Result<CodeResult> result = RunBlocks(blocks, sink, token);
  std::lock_guard lock(session_mutex_);
  running_cancel_ = nullptr;
  return result;
}

Result<CodeResult> SessionExecutor::RunBlocks(const std::vector<CodeBlock>& blocks,
                                              const OutputSink& sink, const CancelToken& token) {
  CodeResult total;
  if (session_ && session_->EndedWhileIdle()) {
    EndSession();
    pending_notice_ = "the previous session ended while idle (idle timeout or its lifetime): its "
                      "variables and imports are lost; this is a fresh session";
  }
  if (!session_) {
    // What the previous session's log gained after its last read (flows closing while it sat
    // idle or ended) is reported here, before the next session switches to a new log.
    ReadNetworkRecords(total);
    SBX_ASSIGN_OR_RETURN(auto driver, StartDriver());
    SessionConfig config;
    config.exec_timeout_seconds = block_timeout_seconds_;
    config.grace_seconds = options_.grace_seconds;
    config.output_bytes = options_.policy->limits.output_bytes;
    config.figures_dir = options_.figures_dir;
    config.stream_idle_seconds = options_.stream_idle_seconds;
    SBX_ASSIGN_OR_RETURN(auto started, PythonSession::Start(std::move(driver), config));
    std::lock_guard lock(session_mutex_);
    session_ = std::move(started);
    // A cancel while the session started found none to kill: it is left for the next execution.
    if (token.cancelled()) return NothingRun(std::move(total), NetworkModeLabel());
  }
  total.notice = std::exchange(pending_notice_, "");
  WorkspaceSnapshot before = SnapshotWorkspace(workspace_.fd.get());
  for (const CodeBlock& block : blocks) {
    CodeResult result = session_->Run(block, sink);
    if (token.cancelled()) result.status = RunStatus::kCancelled;
    ++total.blocks_run;
    bool failed = result.status != RunStatus::kExited || result.exit_code != 0 || result.rejected;
    Merge(total, std::move(result));
    if (!session_->alive()) {
      EndSession();
      pending_notice_ = "a fresh session: the previous one was lost (" + std::string(RunStatusName(total.status)) +
                        "), with its variables and imports";
    }
    if (failed || !session_) break;
  }
  total.files_changed = ChangedFiles(before, SnapshotWorkspace(workspace_.fd.get()));
  ReadNetwork(total);
  return total;
}

std::string SessionExecutor::NetworkModeLabel() const {
  return local_ ? "host" : NetworkModeName(options_.policy->network);
}

void SessionExecutor::ReadNetworkRecords(CodeResult& result) {
  if (network_log_path_.empty()) return;
  result.network_log_path = network_log_path_;
  NetworkLogDigest digest = ReadNetworkLogSince(network_log_path_, &network_log_offset_);
  // Each name once per result, however many reads found it.
  auto add = [](std::vector<std::string>& names, std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  };
  for (auto& name : digest.denials) add(result.network_blocked, name);
  for (auto& name : digest.failures) add(result.network_failed, name);
  result.network_allowed += digest.allowed;
  result.network_denied += digest.denied;
}

void SessionExecutor::ReadNetwork(CodeResult& result) {
  result.network_mode = NetworkModeLabel();
  ReadNetworkRecords(result);
  if (network_log_path_.empty()) return;
  // The session has ended (lost during this execution, or closed): its log is complete.
  if (!session_ && !ended_networks_.empty() && ended_networks_.back().log_path == network_log_path_) {
    result.network_coverage = ended_networks_.back().tcp_coverage;
    result.network_log_sha256 = ended_networks_.back().log_sha256;
  }
}

void SessionExecutor::EndSession() {
  if (!session_) return;
  session_->Close();
  const auto& network = session_->ended_network();
  if (network && network->mode == "allowlist") ended_networks_.push_back(*network);
  std::unique_ptr<PythonSession> ended;
  {
    // Destroyed outside the lock: its teardown waits for the sandbox, which Cancel() must not.
    std::lock_guard lock(session_mutex_);
    ended = std::move(session_);
  }
}

void SessionExecutor::Close() { EndSession(); }

void SessionExecutor::CancelLocked(CancelToken& token) {
  token.cancelled_ = true;
  // Only the running execution's session: a token cancelled late must not kill a later one's.
  if (&token == running_cancel_ && session_) session_->Kill();
}

void SessionExecutor::Cancel(CancelToken& token) {
  std::lock_guard lock(session_mutex_);
  CancelLocked(token);
}

void SessionExecutor::Cancel() {
  std::lock_guard lock(session_mutex_);
  if (running_cancel_ != nullptr) CancelLocked(*running_cancel_);
}

void SessionExecutor::CancelFromNowOn() {
  std::lock_guard lock(session_mutex_);
  cancelled_from_now_on_ = true;
  if (running_cancel_ != nullptr) CancelLocked(*running_cancel_);
}

void SessionExecutor::SetBlockTimeout(double seconds) {
  block_timeout_seconds_ = seconds;
  if (session_) session_->set_exec_timeout_seconds(seconds);
}

Result<CodeResult> SessionExecutor::ExecuteThenClose(const std::vector<CodeBlock>& blocks) {
  auto result = Execute(blocks);
  Close();
  // What netd logged after the execution's read (flows it was still closing) counts too, also
  // when a block was refused after others ran (rejected, an over-long source).
  if (result) ReadNetwork(*result);
  return result;
}

Result<CopyOutResult> SessionExecutor::CopyOutputs(const std::vector<std::string>& requests,
                                                   const std::string& host_dir,
                                                   const std::vector<std::string>& reserved) {
  Close();  // copy-out only once every process of the sandbox is dead
  CopyOutBudgets budgets;
  budgets.reserved = reserved;
  // The workspace by the fd held since it was opened, not its path again: a parent directory
  // swapped meanwhile cannot redirect the reads.
  UniqueFd dest(::open(host_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dest) return SysError(ErrorCode::kInvalidInput, "open destination " + host_dir);
  return CopyOutAt(workspace_.fd.get(), requests, dest.get(), budgets);
}

Result<ArchiveReport> SessionExecutor::PersistWorkspace(const std::string& archive_path) {
  Close();
  return PersistWorkspaceTar(workspace_.path, archive_path);
}

Result<std::unique_ptr<LocalExecutor>> LocalExecutor::Create(ExecutorOptions options) {
  std::unique_ptr<LocalExecutor> executor(new LocalExecutor(std::move(options)));
  SBX_TRY(executor->Prepare(/*local=*/true));
  std::fprintf(stderr,
               "sbx: WARNING: LocalExecutor runs code directly on this host with NO ISOLATION "
               "(no namespaces, limits or syscall filter). Use it for development only.\n");
  return executor;
}

Result<std::unique_ptr<DriverProcess>> LocalExecutor::StartDriver() {
  return StartLocalDriver({"/usr/bin/python3", image_dir_ + kSessionDriverPath,
                           SecondsArg(options_.session_idle_seconds)},
                          workspace_.path);
}

Result<std::unique_ptr<SandboxExecutor>> SandboxExecutor::Create(ExecutorOptions options) {
  SBX_TRY(ValidateManifest(options.manifest));
  return std::unique_ptr<SandboxExecutor>(new SandboxExecutor(std::move(options)));
}

Result<CodeResult> SandboxExecutor::Execute(const std::vector<CodeBlock>& blocks) {
  if (auto valid = ValidateBlocks(blocks); !valid) {
    return Rejected(valid.error(), NetworkModeName(options_.policy->network));
  }
  SBX_ASSIGN_OR_RETURN(auto session, SessionExecutor::Create(options_));
  return session->ExecuteThenClose(blocks);  // its temporary workspace ends here too
}

}  // namespace sbx::executor
