// Starts the zygote's base sandbox and turns its forks into placed, prepared sessions.
#include "src/executor/zygote.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/fd_passing.h"
#include "sandbox/isolation/capabilities.h"
#include "sandbox/isolation/rlimits.h"
#include "sandbox/launch/run_layers.h"
#include "sandbox/launcher.h"
#include "sandbox/seccomp/seccomp_filter.h"
#include "src/executor/frame_channel.h"

namespace sbx::executor {
namespace {

std::string Base64(const void* data, size_t size) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string out;
  for (size_t i = 0; i < size; i += 3) {
    uint32_t chunk = bytes[i] << 16;
    if (i + 1 < size) chunk |= bytes[i + 1] << 8;
    if (i + 2 < size) chunk |= bytes[i + 2];
    out += kAlphabet[(chunk >> 18) & 63];
    out += kAlphabet[(chunk >> 12) & 63];
    out += i + 1 < size ? kAlphabet[(chunk >> 6) & 63] : '=';
    out += i + 2 < size ? kAlphabet[chunk & 63] : '=';
  }
  return out;
}

Result<std::string> ConfigJson(const ZygoteOptions& options) {
  auto seccomp = CompileSeccompProgram(SeccompOptions{});
  // A pooled session never runs without the filter, whatever the policy allows: the zygote
  // has no "unfiltered" mode.
  if (!seccomp) return seccomp.error().Context("seccomp (required for pooled sessions)");
  SBX_ASSIGN_OR_RETURN(auto capabilities, PrepareCapabilitiesInParent());
  const auto& instructions = (*seccomp)->instructions;
  const Limits& limits = options.policy->limits;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  nlohmann::json config = {
      {"op", "config"},
      {"library", kZygoteSessionLibrary},
      {"seccomp", Base64(instructions.data(), instructions.size() * sizeof(instructions[0]))},
      {"last_cap", capabilities.last_cap},
      {"rootfs_size_bytes", limits.rootfs_size_bytes},
      {"tmp_size_bytes", limits.tmp_size_bytes},
      {"idle_seconds", options.session_idle_seconds},
      {"warmup", options.warmup_code},
      {"prefault", options.prefault_code},
      {"prefault_budget_pages", options.prefault_budget_bytes / page},
      {"first_execution_prefault_pages", options.first_execution_prefault_bytes / page},
  };
  return config.dump();
}

std::string SpawnJson(const std::string& name, const RlimitPlan& rlimits) {
  nlohmann::json entries = nlohmann::json::array();
  for (size_t i = 0; i < rlimits.count; ++i) {
    entries.push_back({rlimits.entries[i].resource, static_cast<uint64_t>(rlimits.entries[i].value)});
  }
  return nlohmann::json{{"op", "spawn"}, {"workspace", name}, {"rlimits", entries}}.dump();
}

int PollMs(double seconds) { return seconds <= 0 ? 0 : static_cast<int>(seconds * 1000) + 1; }

// The session's first byte, with the credentials the kernel attached: its pid in our pid
// namespace. The sender cannot choose them (it sends no SCM_CREDENTIALS of its own).
Result<pid_t> ReceiveHello(int fd, int abort_fd, double timeout_seconds) {
  struct pollfd fds[2] = {{fd, POLLIN, 0}, {abort_fd, POLLIN, 0}};
  int ready;
  do {
    ready = ::poll(fds, 2, PollMs(timeout_seconds));
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return SysError(ErrorCode::kIo, "poll");
  if (ready == 0) return MakeError(ErrorCode::kSetupFailed, "the zygote did not fork the session in time");
  if (!(fds[0].revents & POLLIN)) return MakeError(ErrorCode::kSetupFailed, "the zygote ended");
  char byte = 0;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(struct ucred))] = {};
  struct iovec iov = {&byte, 1};
  struct msghdr message {};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return SysError(ErrorCode::kIo, "recvmsg (session hello)");
  if (got == 0) return MakeError(ErrorCode::kSetupFailed, "the session ended before it started");
  if (byte != 'h') return MakeError(ErrorCode::kSetupFailed, "the session's first message is not its hello");
  for (struct cmsghdr* cmsg = CMSG_FIRSTHDR(&message); cmsg; cmsg = CMSG_NXTHDR(&message, cmsg)) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS &&
        cmsg->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
      struct ucred credentials;
      std::memcpy(&credentials, CMSG_DATA(cmsg), sizeof credentials);
      if (credentials.pid <= 0) break;
      return credentials.pid;
    }
  }
  return MakeError(ErrorCode::kSetupFailed, "the session's hello carried no credentials");
}

bool WaitReadable(int fd, int timeout_ms) {
  struct pollfd pfd = {fd, POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&pfd, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  return ready == 1;
}

}  // namespace

std::optional<SessionSlot> SessionSlot::Take(const std::shared_ptr<std::atomic<size_t>>& taken, size_t max) {
  if (taken->fetch_add(1) >= max) {
    taken->fetch_sub(1);
    return std::nullopt;
  }
  return SessionSlot(taken);
}

SessionSlot::~SessionSlot() {
  if (taken_) taken_->fetch_sub(1);
}

PooledDriver::PooledDriver(UniqueFd channel, UniqueFd pidfd, pid_t host_pid, std::optional<RunCgroup> cgroup,
                           std::vector<std::string> degraded, SessionSlot slot)
    : pidfd_(std::move(pidfd)),
      host_pid_(host_pid),
      cgroup_(std::move(cgroup)),
      degraded_(std::move(degraded)),
      slot_(std::move(slot)) {
  channel_ = std::move(channel);
}

PooledDriver::~PooledDriver() {
  Stop();
  if (cgroup_) (void)cgroup_->RemoveInParent();
}

void PooledDriver::Kill() {
  // By the pidfd, which cannot name a reused pid: safe while another thread Stops or Waits.
  ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
}

void PooledDriver::Stop() {
  if (!killed_) {
    // The session is pid 1 of its pid namespace: its death ends every process it started.
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    killed_ = true;
  }
  // Until it is gone, however long an uninterruptible sleep delays its death: what callers do
  // next (copy-out, removing the workspace) assumes nothing of the session can still run, as
  // the cold path does (its init reports only once everything else of the sandbox is reaped).
  while (!WaitReadable(pidfd_.get(), 10'000)) {
    std::fprintf(stderr, "sbx: pooled session (host pid %d) has not died 10 s after SIGKILL; still "
                         "waiting for it (a process in uninterruptible sleep?)\n", static_cast<int>(host_pid_));
  }
}

Result<void> PooledDriver::PlaceInCgroup() {
  if (cgroup_) {
    if (auto added = cgroup_->AddProcessInParent(host_pid_); !added) return added.error().Context("cgroup");
  }
  const char placed = 'c';
  if (::write(channel_fd(), &placed, 1) != 1) return SysError(ErrorCode::kSetupFailed, "write (cgroup placed)");
  return {};
}

Result<RunResult> PooledDriver::Wait() {
  (void)WaitReadable(pidfd_.get(), -1);
  RunResult result;
  CgroupUsage usage = cgroup_ ? cgroup_->ReadUsage() : CgroupUsage{};
  result.peak_memory_bytes = usage.peak_memory_bytes.value_or(0);
  result.cpu_ms = usage.cpu_usage_ns.value_or(0) / 1'000'000;
  result.signal = SIGKILL;  // the zygote reaps the session: its own wait status is not seen here
  result.status = usage.oom_kills > 0 ? RunStatus::kOomKilled
                  : usage.pids_max_hits > 0 ? RunStatus::kPidsLimit
                                            : RunStatus::kSignaled;
  result.degraded = degraded_;
  return result;
}

Zygote::Zygote(const ZygoteOptions& options, std::unique_ptr<DriverProcess> driver)
    : options_(options), driver_(std::move(driver)) {}

Zygote::~Zygote() { Stop(); }

Result<std::unique_ptr<Zygote>> Zygote::Start(const ZygoteOptions& options, const Workspace& workspaces_root) {
  if (options.policy->network != NetworkMode::kNone) {
    return InvalidInput("pool: pooled sessions always get a fresh network namespace; the policy's "
                        "network must be \"none\"");
  }
  SBX_ASSIGN_OR_RETURN(auto config, ConfigJson(options));
  RunSpec spec;
  Policy zygote_policy = options.policy.get();
  zygote_policy.limits.timeout_seconds = LimitRanges::kMaxTimeout;  // lives as long as the pool
  // Room for what its sessions leave charged to its cgroup (kSessionResidueBytes, and the pages
  // each copies at its fork, before it is moved into its own cgroup: at most the pre-fault
  // budget), within the host's RAM. The zygote runs no untrusted code; each session's own use is
  // limited in its own cgroup.
  const uint64_t per_session = kSessionResidueBytes + options.prefault_budget_bytes;
  zygote_policy.limits.memory_bytes =
      std::min(HostMemoryBytes(), options.policy->limits.memory_bytes + options.max_sessions * per_session);
  SBX_ASSIGN_OR_RETURN(spec.policy, ValidPolicy::Check(std::move(zygote_policy)));
  spec.argv = {"/usr/bin/python3", kZygotePath};
  spec.image_dir = options.image_dir;
  spec.held_workspace = &workspaces_root;
  spec.cgroup_options = options.cgroup_options;
  spec.zygote_keeps_namespace_capabilities = true;
  auto driver = StartSandboxedDriver(std::move(spec));
  if (!driver) return driver.error().Context("zygote");
  std::unique_ptr<Zygote> zygote(new Zygote(options, std::move(*driver)));
  FrameChannel channel(zygote->driver_->channel_fd(), zygote->driver_->ended_fd(), 1 << 16);
  std::string why, reply;
  auto status = channel.Write(config, options.start_timeout_seconds, &why);
  if (status == FrameChannel::Status::kOk) status = channel.Read(&reply, options.start_timeout_seconds, &why);
  if (status != FrameChannel::Status::kOk) {
    zygote->driver_->Stop();
    auto ended = zygote->driver_->Wait();
    std::string detail = "zygote: did not start (" + why + ")";
    if (!ended) return ended.error().Context(detail);
    if (!ended->setup_error.empty()) detail += ": " + ended->setup_error;
    if (!ended->stderr_data.empty()) detail += "; stderr: " + ended->stderr_data.substr(0, 2000);
    return MakeError(ErrorCode::kSetupFailed, detail);
  }
  auto ready = nlohmann::json::parse(reply, nullptr, false);
  if (!ready.is_object() || ready.value("op", "") != "ready" || ready.value("threads", 0) != 1) {
    return MakeError(ErrorCode::kSetupFailed,
                     "zygote: not ready to fork (it must be single-threaded): " + reply.substr(0, 200));
  }
  zygote->prefault_pages_ = ready.value("prefault_pages", size_t{0});
  zygote->first_execution_prefault_pages_ = ready.value("first_execution_prefault_pages", size_t{0});
  return zygote;
}

bool Zygote::alive() const { return !WaitReadable(driver_->ended_fd(), 0); }

void Zygote::Stop() {
  if (driver_) driver_->Stop();
}

Result<void> Zygote::SendSpawn(const std::string& request, int session_fd, int workspace_fd) {
  std::string frame = EncodeFrame(request);
  const int fds[2] = {session_fd, workspace_fd};
  std::lock_guard<std::mutex> lock(control_mutex_);
  const int fd = driver_->channel_fd();
  ssize_t sent;
  while ((sent = SendWithFds(fd, frame.data(), frame.size(), fds, 2)) < 0) {
    if (errno != EAGAIN) return SysError(ErrorCode::kIo, "sendmsg (spawn request to the zygote)");
    struct pollfd pfd = {fd, POLLOUT, 0};
    if (::poll(&pfd, 1, PollMs(options_.spawn_timeout_seconds)) != 1)
      return MakeError(ErrorCode::kSetupFailed, "the zygote does not take requests");
  }
  // A spawn request is a few hundred bytes: a short write means the zygote is gone.
  if (static_cast<size_t>(sent) != frame.size())
    return MakeError(ErrorCode::kSetupFailed, "short write of a spawn request to the zygote");
  return {};
}

Result<std::unique_ptr<PooledDriver>> Zygote::Spawn(const Workspace& workspace, const std::string& name) {
  if (!IsValidRunId(name)) return InvalidInput("pool: workspace name \"" + name + "\" must match [A-Za-z0-9-]");
  auto slot = SessionSlot::Take(live_sessions_, options_.max_sessions);
  if (!slot) {
    return MakeError(ErrorCode::kUnavailable,
                     std::to_string(options_.max_sessions) +
                         " sessions are alive, the most this pool holds (max_sessions); end one first, or "
                         "create the pool with a larger max_sessions");
  }
  // The filter is the zygote's (ConfigJson): a pooled session never runs without it.
  auto layers = DecideRunLayers(NewRunId(), options_.policy.get(), options_.cgroup_options, {.seccomp = false});
  if (!layers) return layers.error().Context("pooled session");
  std::optional<RunCgroup> cgroup = std::move(layers->cgroup);
  const CgroupEnforcement enforced = cgroup ? cgroup->enforcement() : CgroupEnforcement{};
  RlimitPlan rlimits = PlanRlimits(options_.policy->limits, enforced.memory, enforced.pids);

  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return SysError(ErrorCode::kIo, "socketpair");
  UniqueFd host(pair[0]), session(pair[1]);
  int on = 1;
  if (::setsockopt(host.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    return SysError(ErrorCode::kIo, "setsockopt(SO_PASSCRED)");
  SBX_TRY(SendSpawn(SpawnJson(name, rlimits), session.get(), workspace.fd.get()));
  session.reset();  // the session holds the only other end now: its death is EOF here

  auto pid = ReceiveHello(host.get(), driver_->ended_fd(), options_.spawn_timeout_seconds);
  if (!pid) return pid.error().Context("pooled session: fork");
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, *pid, 0)));
  if (!pidfd) return SysError(ErrorCode::kSetupFailed, "pooled session: pidfd_open(" + std::to_string(*pid) + ")");
  int off = 0;
  (void)::setsockopt(host.get(), SOL_SOCKET, SO_PASSCRED, &off, sizeof off);
  auto driver = std::make_unique<PooledDriver>(UniqueFd(host.release()), std::move(pidfd), *pid,
                                               std::move(cgroup), std::move(layers->degraded), std::move(*slot));
  // From here on, any failure destroys `driver`: the session is killed through its pidfd and
  // its cgroup removed.
  if (auto placed = driver->PlaceInCgroup(); !placed) return placed.error().Context("pooled session");
  FrameChannel channel(driver->channel_fd(), driver->ended_fd(), 1 << 16);
  std::string frame, why;
  if (channel.Read(&frame, options_.spawn_timeout_seconds, &why) != FrameChannel::Status::kOk)
    return MakeError(ErrorCode::kSetupFailed, "pooled session: setup: " + why);
  auto message = nlohmann::json::parse(frame, nullptr, false);
  if (message.is_object() && message.value("op", "") == "prepared") return driver;
  if (message.is_object() && message.value("op", "") == "setup_failed") {
    const auto step = message.value("step", std::string("?"));
    const int err = message.value("errno", 0);
    const auto detail = message.value("message", std::string());
    return MakeError(ErrorCode::kSetupFailed, "pooled session setup: " + step + ": " + std::strerror(err) +
                                                   (detail.empty() ? "" : " (" + detail + ")"));
  }
  return MakeError(ErrorCode::kSetupFailed, "pooled session: unexpected first frame: " + frame.substr(0, 200));
}

}  // namespace sbx::executor
