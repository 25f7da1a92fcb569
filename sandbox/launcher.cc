// The parent side of a sandboxed run, in the order documented in launcher.h.
#include "sandbox/launcher.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "base/sibling_executable.h"
#include "sandbox/host/blocker_hints.h"
#include "sandbox/image/image.h"
#include "sandbox/image/image_verify.h"
#include "sandbox/isolation/priority.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/launch/child_main.h"
#include "sandbox/launch/child_wait.h"
#include "sandbox/launch/environment.h"
#include "sandbox/launch/outer_run.h"
#include "sandbox/launch/output_forwarder.h"
#include "sandbox/launch/reap_later.h"
#include "sandbox/launch/run_layers.h"
#include "sandbox/launch/supervisor.h"
#include "sandbox/net/allowlist_run.h"
#include "sandbox/workspace/workspace.h"

namespace sbx {
namespace {

// Output waiting for a slow reader of the runner's own stdout/stderr, per stream.
constexpr size_t kForwardQueueBytes = 8 << 20;

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> MakePipe(const char* what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return SysError(ErrorCode::kSetupFailed, std::string("pipe2 (") + what + ")");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// PATH search happens in the parent against the image, so the child only tries a list.
std::vector<std::string> ExecCandidates(const std::string& command, const std::vector<std::string>& env) {
  if (command.find('/') != std::string::npos) return {command};
  std::string path;
  for (const auto& entry : env) {
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  }
  std::vector<std::string> candidates;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') candidates.push_back(dir + "/" + command);
    start = end + 1;
  }
  return candidates;
}

Result<void> ValidateArgv(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) return InvalidInput("command: give the program to run after --");
  size_t total = 0;
  for (const auto& arg : argv) {
    if (arg.find('\0') != std::string::npos) return InvalidInput("command: an argument contains a NUL byte");
    if (arg.size() >= 128 * 1024) {
      return InvalidInput("command: an argument is " + std::to_string(arg.size()) +
                          " bytes, above the kernel's 128 KiB per-argument limit; pass it in a file");
    }
    total += arg.size() + 1;
  }
  if (total > 1024 * 1024) return InvalidInput("command: the arguments total more than 1 MiB; pass them in a file");
  return Ok{};
}

// clone3 where the kernel has it (the child can then start inside its cgroup); plain clone
// otherwise. Fork-like: the child continues on a copy of this stack.
pid_t CloneSandbox(uint64_t flags, int cgroup_fd, int* pidfd) {
  struct clone_args args {};
  args.flags = flags | CLONE_PIDFD | (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0);
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  args.cgroup = cgroup_fd >= 0 ? static_cast<uint64_t>(cgroup_fd) : 0;
  long pid = ::syscall(SYS_clone3, &args, sizeof(args));
  if (pid < 0 && errno == ENOSYS && cgroup_fd < 0) {
    pid = ::syscall(SYS_clone, flags | CLONE_PIDFD | SIGCHLD, nullptr, pidfd, nullptr, nullptr);
  }
  return static_cast<pid_t>(pid);
}

RunStatus StatusFrom(const SupervisionOutcome& outcome, const CgroupUsage& usage, RunResult& result) {
  if (outcome.helper_died) return RunStatus::kNetdDied;
  if (outcome.timed_out) return RunStatus::kTimedOut;
  if (outcome.cancelled) return RunStatus::kCancelled;
  if (!outcome.program_status) {
    // The init died without reporting: killed from outside, or the memory limit hit it.
    result.signal = WIFSIGNALED(outcome.init_status) ? WTERMSIG(outcome.init_status) : SIGKILL;
    return usage.oom_kills > 0 ? RunStatus::kOomKilled : RunStatus::kSignaled;
  }
  int status = *outcome.program_status;
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (usage.oom_kills > 0) return RunStatus::kOomKilled;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) return RunStatus::kSeccompViolation;
  bool failed = WIFSIGNALED(status) || result.exit_code != 0;
  if (failed && usage.pids_max_hits > 0) return RunStatus::kPidsLimit;
  return WIFSIGNALED(status) ? RunStatus::kSignaled : RunStatus::kExited;
}

const char* CgroupMechanism(CgroupVersion version) {
  return version == CgroupVersion::kV2 ? "cgroup_v2" : version == CgroupVersion::kV1 ? "cgroup_v1" : "none";
}

// The pipes and the sync socket between runner and child, and the program's stdin.
struct ChildChannels {
  Pipe out;
  Pipe err;
  UniqueFd sync_parent;
  UniqueFd sync_child;
  UniqueFd dev_null;  // stdin when the caller gave none
  int stdin_fd = -1;
};

Result<ChildChannels> OpenChildChannels(int stdin_fd) {
  ChildChannels channels;
  auto out = MakePipe("stdout");
  if (!out) return out.error();
  channels.out = std::move(*out);
  auto err = MakePipe("stderr");
  if (!err) return err.error();
  channels.err = std::move(*err);
  int sync_fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync_fds) != 0)
    return SysError(ErrorCode::kSetupFailed, "socketpair");
  channels.sync_parent.reset(sync_fds[0]);
  channels.sync_child.reset(sync_fds[1]);
  channels.stdin_fd = stdin_fd;
  if (stdin_fd < 0) {
    channels.dev_null.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!channels.dev_null) return SysError(ErrorCode::kSetupFailed, "open(/dev/null)");
    channels.stdin_fd = channels.dev_null.get();
  }
  return channels;
}

// A zygote run's library for its sessions (kZygoteSessionLibrary): next to the running
// executable, else the one this tree built; canonical and opened O_PATH here, so the child can
// check that the path it re-opens is still this file.
struct SessionLibrary {
  std::string path;
  UniqueFd fd;
};

Result<SessionLibrary> OpenSessionLibrary() {
  auto next_to_us = SiblingExecutable(kSessionLibraryName, "");
  const std::string found = next_to_us ? *next_to_us : SBX_SESSION_LIBRARY_BUILD_PATH;
  char canonical[PATH_MAX];
  if (::realpath(found.c_str(), canonical) == nullptr) {
    return SysError(ErrorCode::kSetupFailed,
                    std::string("zygote: the pooled sessions' library ") + kSessionLibraryName +
                        " is neither next to this program nor at " + found +
                        "; build it (tools/build.sh) or install it beside sbx");
  }
  SessionLibrary library{canonical, UniqueFd(::open(canonical, O_PATH | O_CLOEXEC | O_NOFOLLOW))};
  struct stat st {};
  if (!library.fd || ::fstat(library.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return SysError(ErrorCode::kSetupFailed, std::string("zygote: open(") + canonical + ") (not a regular file?)");
  }
  return library;
}

// The rest of step 2 for what the child builds: its mounts, network capture, rlimits,
// environment and program. `plan` already holds its descriptors, ids and filters.
Result<void> PlanTheSandbox(const RunSpec& spec, const OpenImage& image, const Workspace* workspace,
                            const SessionLibrary* session_library, const AllowlistRun* allowlist,
                            const CgroupEnforcement& enforced, ChildPlan& plan) {
  const Policy& policy = spec.policy.get();
  plan.set_up_loopback = policy.network != NetworkMode::kHost;
  RootExtras extras;
  if (allowlist) {
    plan.capture = allowlist->plan();
    // The stub DNS of sbx-netd answers on the sandbox's own loopback (a capture socket).
    extras.resolv_conf = "nameserver 127.0.0.1\noptions attempts:2 timeout:2\n";
    extras.ca_bundle = allowlist->trust().sandbox_bundle();
  }
  if (spec.zygote_keeps_namespace_capabilities) {
    if (!plan.root_mode) {
      return InvalidInput("zygote: the warm pool needs sbx to run as root (root-mode id mapping)");
    }
    if (session_library == nullptr) return InvalidInput("zygote: the pooled sessions' library is not open");
    plan.keep_namespace_capabilities = true;
    extras.expose_image_at = kZygoteImageDir;
    extras.expose_library_at = kZygoteSessionLibrary;
    extras.library_path = session_library->path;
    extras.library_fd = session_library->fd.get();
  }
  plan.mounts = PrepareMountsInParent(image.path, image.fd.get(), workspace ? workspace->path : std::string(),
                                      workspace ? workspace->fd.get() : -1, policy.limits, std::move(extras));
  plan.rlimits = PlanRlimits(policy.limits, enforced.memory, enforced.pids);
  if (allowlist && !allowlist->sandbox_env().empty()) {
    // The trust bundle's variables, the placeholders and the proxy variables; the policy's env
    // still has the last word on the bundle variables (placeholder and proxy names may not be
    // in it: ValidatePolicy).
    std::map<std::string, std::string> env = allowlist->sandbox_env();
    for (const auto& [name, value] : policy.env) env[name] = value;
    plan.env_storage = BuildSandboxEnvironment(env);
  } else {
    plan.env_storage = BuildSandboxEnvironment(policy.env);
  }
  plan.argv_storage = spec.argv;
  plan.exec_candidates = ExecCandidates(spec.argv[0], plan.env_storage);
  plan.Seal();
  return Ok{};
}

// Step 2 of an outer run: no mounts, no network setup; the program enters `workspace` by fd.
void PlanOuterRun(const RunSpec& spec, const Workspace& workspace, const OuterArea& area,
                  const CgroupEnforcement& enforced, ChildPlan& plan) {
  plan.outer = true;
  plan.workspace_fd = workspace.fd.get();
  plan.root_mode = true;  // sbx is root: setgroups(0) sheds its groups
  plan.set_up_loopback = false;
  plan.rlimits = PlanRlimits(spec.policy->limits, enforced.memory, enforced.pids);
  plan.env_storage = OuterEnvironment(spec.policy->env, workspace.path, area.tmp_dir());
  plan.argv_storage = spec.argv;
  plan.exec_candidates = ExecCandidates(spec.argv[0], plan.env_storage);
  plan.Seal();
}

// 22. The typed result's output, usage and status from what supervision saw.
void FillResult(const RunSpec& spec, const SupervisionOutcome& outcome, const OutputCapture& out,
                const OutputCapture& err, const CgroupUsage& usage, RunResult& result) {
  result.wall_ms = outcome.wall_ns / 1000000;
  result.stdout_data = out.Text();
  result.stderr_data = err.Text();
  result.stdout_truncated = out.truncated();
  result.stderr_truncated = err.truncated();
  result.cpu_ms = usage.cpu_usage_ns ? *usage.cpu_usage_ns / 1000000 : outcome.cpu_us / 1000;
  result.peak_memory_bytes = usage.peak_memory_bytes ? *usage.peak_memory_bytes : outcome.max_rss_kib * 1024;
  if (outcome.setup_failure) {
    const ChildReport& report = *outcome.setup_failure;
    result.status = RunStatus::kSetupFailed;
    result.setup_error = std::string("sandbox setup: ") + ChildStepName(report.step) + ": " +
                         std::strerror(report.err_no);
    if (std::string hint = SetupFailureHint(report.step, report.err_no); !hint.empty())
      result.setup_error += ": " + hint;
  } else if (outcome.exec_errno) {
    result.status = RunStatus::kExited;
    result.exec_failure_code = *outcome.exec_errno == ENOENT ? 127 : 126;
    result.exit_code = result.exec_failure_code;
    result.exec_error = "cannot run " + spec.argv[0] + " in the sandbox: " + std::strerror(*outcome.exec_errno);
    result.stderr_data += "sbx: " + result.exec_error + "\n";
  } else {
    result.status = StatusFrom(outcome, usage, result);
  }
}

// What enforced each limit: the cgroup where it took the limit, else the rlimit fallback;
// the timeout by what kills the whole tree.
void AppendLimitEnforcement(const CgroupEnforcement& enforced, const char* timeout,
                            std::vector<Enforcement>& lines) {
  const char* cg = CgroupMechanism(enforced.version);
  lines.insert(lines.end(), {
      {"memory", enforced.memory ? cg : "rlimit_as"},
      {"pids", enforced.pids ? cg : "rlimit_nproc"},
      {"cpu", enforced.cpu ? cg : "none"},
      {"timeout", timeout},
      {"file_size", "rlimit"},
      {"open_files", "rlimit"},
      {"output", "capture"},
  });
}

// What enforced each layer and limit in this run (RunResult::enforcement).
std::vector<Enforcement> DescribeEnforcement(const Policy& policy, const ChildPlan& plan,
                                             const CgroupEnforcement& enforced,
                                             const SupervisionOutcome& outcome) {
  std::vector<Enforcement> lines = {
      {"user_namespace", "user_namespace"},
      {"pid_namespace", "pid_namespace"},
      {"mount_namespace", "overlay"},
      // Told by the init's last report: a sandbox killed before it reported leaves it unknown.
      {"root", !outcome.program_status                      ? "unreported"
               : outcome.report_flags & kReportRootMoved ? "move_chroot"
                                                          : "pivot_root"},
      {"network", policy.network == NetworkMode::kNone      ? "network_namespace"
                  : policy.network == NetworkMode::kAllowlist ? "network_namespace+sbx_netd"
                                                              : "host"},
      {"seccomp", plan.keep_namespace_capabilities ? "per_session" : plan.seccomp ? "seccomp_bpf" : "none"},
      {"capabilities", plan.keep_namespace_capabilities ? "kept_in_user_namespace" : "dropped"},
  };
  AppendLimitEnforcement(enforced, "pid_namespace", lines);
  return lines;
}

// An outer run's: the namespaces, the root and the network are the container runtime's; the
// run's init, a subreaper, kills the tree at the timeout.
std::vector<Enforcement> DescribeOuterEnforcement(const CgroupEnforcement& enforced, bool seccomp) {
  std::vector<Enforcement> lines = {
      {"isolation", "outer_runtime"},
      {"user_namespace", "none"},
      {"pid_namespace", "none"},
      {"mount_namespace", "none"},
      {"root", "outer_runtime"},
      {"network", "outer_runtime"},
      {"seccomp", seccomp ? "seccomp_bpf" : "none"},
      {"capabilities", "dropped"},
  };
  AppendLimitEnforcement(enforced, "subreaper", lines);
  return lines;
}

// What step 1 opens before anything is created: the image and the id mapping (none for an outer
// run: O1) and the workspace the spec names by path.
struct RunInputs {
  bool outer = false;
  std::optional<OpenImage> image;
  std::optional<IdMapping> mapping;
  std::optional<Workspace> opened_workspace;
  std::optional<SessionLibrary> session_library;  // a zygote run's
};

// 1. Validate the command (the policy was checked when it was made: ValidPolicy); verify and
//    open the image; open the workspace.
Result<RunInputs> OpenRunInputs(const RunSpec& spec) {
  const Policy& policy = spec.policy.get();
  SBX_TRY(ValidateArgv(spec.argv));
  RunInputs inputs;
  // Outer: the container runtime isolates; no image, no id maps (launcher.h, O1).
  inputs.outer = policy.isolation == Isolation::kOuter;
  if (inputs.outer) {
    if (spec.zygote_keeps_namespace_capabilities)
      return InvalidInput("zygote: needs isolation \"namespaces\"");
    SBX_TRY(CheckOuterRunner());
  } else {
    // An explicit image_dir wins over the policy's image (the default when it names none).
    SBX_ASSIGN_OR_RETURN(auto image_dir, spec.image_dir.empty()
                                             ? ResolveImageDir(policy.image)
                                             : Result<std::string>(spec.image_dir));
    SBX_ASSIGN_OR_RETURN(auto opened, OpenVerifiedImage(image_dir));
    inputs.image = std::move(opened);
    SBX_ASSIGN_OR_RETURN(auto computed, ComputeIdMapping(::geteuid(), ::getegid()));
    inputs.mapping = computed;
    if (spec.zygote_keeps_namespace_capabilities) {
      SBX_ASSIGN_OR_RETURN(auto library, OpenSessionLibrary());
      inputs.session_library = std::move(library);
    }
  }
  if (spec.held_workspace != nullptr) {
    if (spec.held_workspace->fd.get() < 0) return InvalidInput("held_workspace: not open");
  } else if (!spec.workspace_dir.empty()) {
    SBX_ASSIGN_OR_RETURN(auto opened, OpenWorkspace(spec.workspace_dir));
    inputs.opened_workspace = std::move(opened);
  }
  return inputs;
}

// What a run holds on the host from step 2 on: its layers, an outer run's private area,
// sbx-netd, the channels to the child, and the plan the child follows (which points into them,
// so this stays where it was made).
struct PreparedRun {
  RunLayers layers;
  std::optional<OuterArea> area;
  std::unique_ptr<AllowlistRun> allowlist;
  ChildChannels channels;
  ChildPlan plan;
};

// 2-3. Everything the child needs, prepared here because the child must not allocate; the
//      layers (with result.degraded), O3's private area and sbx-netd, ready before the child.
Result<void> PrepareRun(const RunSpec& spec, const RunInputs& inputs, RunResult& result,
                        PreparedRun& run) {
  const Policy& policy = spec.policy.get();
  ChildPlan& plan = run.plan;
  SBX_ASSIGN_OR_RETURN(auto capabilities, PrepareCapabilitiesInParent());
  auto runner_strings = FindRunnerStringsInParent();
  if (!runner_strings) return runner_strings.error().Context("the runner's command line");
  plan.runner_strings = *runner_strings;
  // The seccomp program and the cgroup, or what stands in where the policy accepts losing one.
  SBX_ASSIGN_OR_RETURN(run.layers, DecideRunLayers(result.run_id, policy, spec.cgroup_options));
  result.degraded = run.layers.degraded;
  // A held workspace is the caller's; without any, /workspace is a tmpfs inside the sandbox
  // (nothing to create on the host's disk, nothing to remove, nothing to copy back).
  const Workspace* workspace = spec.held_workspace          ? spec.held_workspace
                               : inputs.opened_workspace ? &*inputs.opened_workspace
                                                         : nullptr;
  // O3. Outer: the private area (TMPDIR; the workspace when none was given) on the host.
  if (inputs.outer) {
    SBX_ASSIGN_OR_RETURN(auto created_area, OuterArea::Create(workspace == nullptr));
    run.area.emplace(std::move(created_area));
    if (workspace == nullptr) workspace = run.area->workspace();
  }
  // Network allowlist: the audit log and sbx-netd, ready before the child exists.
  if (policy.network == NetworkMode::kAllowlist) {
    SBX_ASSIGN_OR_RETURN(
        run.allowlist, AllowlistRun::Start(policy.network_allowlist,
                                           {spec.netd_binary, spec.network_log_path, result.run_id,
                                            inputs.image ? inputs.image->fd.get() : -1}));
  }
  SBX_ASSIGN_OR_RETURN(run.channels, OpenChildChannels(spec.stdin_fd));
  plan.sync_fd = run.channels.sync_child.get();
  plan.parent_sync_fd = run.channels.sync_parent.get();
  plan.stdin_fd = run.channels.stdin_fd;
  plan.stdout_fd = run.channels.out.write.get();
  plan.stderr_fd = run.channels.err.write.get();
  plan.capabilities = capabilities;
  plan.seccomp = run.layers.seccomp;
  if (inputs.outer) {
    PlanOuterRun(spec, *workspace, *run.area, run.layers.enforcement(), plan);
    return Ok{};
  }
  plan.root_mode = inputs.mapping->root_mode;
  return PlanTheSandbox(spec, *inputs.image, workspace, inputs.session_library ? &*inputs.session_library : nullptr,
                        run.allowlist.get(), run.layers.enforcement(), plan);
}

// The child once cloned: its pid and the pidfd that holds it.
struct StartedChild {
  pid_t pid = -1;
  UniqueFd pidfd;
};

// 4. The namespaces (outer: none, O4). The clone's copy of the runner becomes the child.
Result<StartedChild> CloneChild(const Policy& policy, bool outer, PreparedRun& run) {
  uint64_t flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC;
  if (policy.network != NetworkMode::kHost) flags |= CLONE_NEWNET;
  if (outer) flags = 0;
  int pidfd_raw = -1;
  const std::optional<RunCgroup>& cgroup = run.layers.cgroup;
  pid_t pid = CloneSandbox(flags, cgroup ? cgroup->CloneIntoFd() : -1, &pidfd_raw);
  if (pid < 0) {
    const int err = errno;
    if (outer) return SysError(ErrorCode::kSetupFailed, "clone3 (isolation \"outer\")", err);
    Error error = SysError(ErrorCode::kSetupFailed,
                           "clone3(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|...)", err);
    std::string hint = NamespaceDeniedHint(err);
    error.message += ": " + (hint.empty() ? std::string("see `sbx doctor`") : hint);
    return error;
  }
  if (pid == 0) {
    if (outer) OuterChildMain(run.plan);
    SandboxChildMain(run.plan);
  }
  run.channels.sync_child.reset();
  if (run.allowlist) run.allowlist->ChildStarted();
  run.channels.out.write.reset();
  run.channels.err.write.reset();
  return StartedChild{pid, UniqueFd(pidfd_raw)};
}

// 5. The inherited priority lowered, id maps, "ids mapped", v1 cgroup placement, "cgroup
//    placed", the allowlist's capture sockets. On failure the child is killed and reaped.
Result<void> HandOverToChild(const std::optional<IdMapping>& mapping, PreparedRun& run,
                             const StartedChild& child) {
  auto abort_child = [&](const Error& error) -> Error {
    KillAndWaitForChild(child.pid, child.pidfd.get());
    return error;
  };
  auto tell_child = [&](char message) { return ::write(run.channels.sync_parent.get(), &message, 1) == 1; };
  // Before a v1 cgroup move, which refuses a real-time task.
  if (auto lowered = LowerInheritedPriorityInParent(child.pid); !lowered)
    return abort_child(lowered.error());
  if (mapping) {
    if (auto maps = WriteIdMapsInParent(child.pid, *mapping); !maps)
      return abort_child(maps.error().Context("user namespace"));
  }
  if (!tell_child('i')) return abort_child(SysError(ErrorCode::kSetupFailed, "sync write"));
  std::optional<RunCgroup>& cgroup = run.layers.cgroup;
  if (cgroup && cgroup->CloneIntoFd() < 0) {
    if (auto added = cgroup->AddProcessInParent(child.pid); !added)
      return abort_child(added.error().Context("cgroup"));
  }
  if (!tell_child('c')) return abort_child(SysError(ErrorCode::kSetupFailed, "sync write"));
  if (run.allowlist) {
    // A child that failed before sending its sockets reports why through the sync socket.
    bool child_failed = false;
    if (auto handed = run.allowlist->HandOver(&child_failed); !handed) return abort_child(handed.error());
  }
  return Ok{};
}

// 21-22. Supervise, reap, account, clean up; the typed result.
void SuperviseAndCollect(const RunSpec& spec, bool outer, PreparedRun& run, const StartedChild& started,
                         RunResult& result) {
  const Policy& policy = spec.policy.get();
  std::optional<RunCgroup>& cgroup = run.layers.cgroup;
  // Forwarding threads start only now, after clone(): they are not copied into the child.
  // (Other threads may exist, such as an earlier run's reaper or a library user's own: the
  // child's code up to execve is async-signal-safe, so none of their locks matter.)
  std::optional<OutputForwarder> forward_out, forward_err;
  if (spec.pass_through_output) {
    forward_out.emplace(1, kForwardQueueBytes);
    forward_err.emplace(2, kForwardQueueBytes);
  }
  OutputCapture out(policy.limits.output_bytes, forward_out ? &*forward_out : nullptr);
  OutputCapture err(policy.limits.output_bytes, forward_err ? &*forward_err : nullptr);
  SupervisedChild child{started.pid, started.pidfd.get(), run.channels.sync_parent.get(),
                        run.channels.out.read.get(), run.channels.err.read.get(), spec.cancel_fd,
                        run.allowlist ? run.allowlist->helper_fd() : -1, outer};
  auto kill_all = [&cgroup] {
    if (cgroup) cgroup->KillAll();
  };
  SupervisionOutcome outcome = Supervise(child, out, err, policy.limits.timeout_seconds,
                                         spec.kill_grace_seconds, kill_all);
  CgroupUsage usage;
  if (outcome.init_exiting && cgroup) {
    // The init reported after reaping every other process, so the run's usage is complete
    // (its CPU time leaves out only the init's own exit): read it while that exit tears the
    // namespaces down. A cgroup is removable only once the init has left it, so reap it next.
    usage = cgroup->ReadUsage();
    ReapInit(child, outcome);
  } else if (outcome.init_exiting) {
    ReapLater(started.pid);  // without a cgroup nothing here needs the teardown to finish
  } else if (cgroup) {
    usage = cgroup->ReadUsage();  // the init was reaped during the supervision
  }
  if (run.allowlist) run.allowlist->RequestStop();  // netd's summary and exit overlap what follows
  if (forward_out) forward_out->Close();
  if (forward_err) forward_err->Close();
  if (cgroup) (void)cgroup->RemoveInParent();
  result.network.mode = NetworkModeName(policy.network);
  if (run.allowlist) run.allowlist->Finish(&result.network);

  FillResult(spec, outcome, out, err, usage, result);
  result.enforcement = outer ? DescribeOuterEnforcement(run.layers.enforcement(), run.plan.seccomp != nullptr)
                             : DescribeEnforcement(policy, run.plan, run.layers.enforcement(), outcome);
}

}  // namespace

Result<RunResult> RunSandboxed(const RunSpec& spec) {
  RunResult result;
  result.run_id = NewRunId();
  // 1. Check the command and open the inputs before creating anything.
  SBX_ASSIGN_OR_RETURN(RunInputs inputs, OpenRunInputs(spec));
  // 2-3. The child's plan, its layers (cgroup or rlimits, seccomp), an outer run's private area
  //      (O3), sbx-netd and the channels to the child.
  PreparedRun run;
  SBX_TRY(PrepareRun(spec, inputs, result, run));
  // 4. clone3 into the namespaces (outer: none, O4).
  SBX_ASSIGN_OR_RETURN(StartedChild child, CloneChild(spec.policy.get(), inputs.outer, run));
  // 5. Id maps, cgroup placement, the allowlist's sockets: the child is handed over.
  SBX_TRY(HandOverToChild(inputs.mapping, run, child));
  // 21-22. Supervise, reap, account, clean up.
  SuperviseAndCollect(spec, inputs.outer, run, child, result);
  return result;
}

}  // namespace sbx
