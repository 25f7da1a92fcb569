// The two homes of a session driver: a sandbox run on its own thread, or a host process group.
#include "src/executor/driver_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <optional>
#include <thread>

#include "sandbox/launch/child_wait.h"
#include "sandbox/launch/environment.h"

namespace sbx::executor {
namespace {

struct SocketPair {
  UniqueFd host;
  UniqueFd driver;
};

Result<SocketPair> MakeSocketPair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return SysError(ErrorCode::kIo, "socketpair");
  }
  return SocketPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void Signal(int fd) {
  uint64_t one = 1;
  (void)!::write(fd, &one, sizeof one);
}

class SandboxedDriver final : public DriverProcess {
 public:
  SandboxedDriver(RunSpec spec, SocketPair sockets, UniqueFd cancel, UniqueFd ended)
      : spec_(std::move(spec)), driver_end_(std::move(sockets.driver)), cancel_(std::move(cancel)),
        ended_(std::move(ended)) {
    channel_ = std::move(sockets.host);
    spec_.stdin_fd = driver_end_.get();
    spec_.cancel_fd = cancel_.get();
    // The sandbox's init gets a parent-death signal tied to the thread that clones it: this
    // thread lives exactly as long as the sandbox.
    thread_ = std::thread([this] {
      outcome_.emplace(RunSandboxed(spec_));
      Signal(ended_.get());
    });
  }
  ~SandboxedDriver() override { Stop(); }

  int ended_fd() const override { return ended_.get(); }

  void Stop() override {
    if (!thread_.joinable()) return;
    Signal(cancel_.get());
    thread_.join();
  }

  void Kill() override { Signal(cancel_.get()); }

  Result<RunResult> Wait() override {
    if (thread_.joinable()) thread_.join();
    return *outcome_;
  }

 private:
  RunSpec spec_;
  UniqueFd driver_end_;
  UniqueFd cancel_;
  UniqueFd ended_;
  std::optional<Result<RunResult>> outcome_;
  std::thread thread_;
};

class LocalDriver final : public DriverProcess {
 public:
  LocalDriver(UniqueFd channel, pid_t pid, UniqueFd pidfd, std::thread parent)
      : pid_(pid), pidfd_(std::move(pidfd)), parent_(std::move(parent)) {
    channel_ = std::move(channel);
  }
  ~LocalDriver() override { Stop(); }

  int ended_fd() const override { return pidfd_.get(); }

  void Stop() override {
    if (reaped_) return;
    // The pid is our unreaped child, so the group it leads cannot have been reused. The
    // driver itself by its pidfd too: until its setsid() there is no such group yet.
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    ::kill(-pid_, SIGKILL);
    Reap();
  }

  // The driver alone, by its pidfd (the group is killed by the Stop that follows): a pidfd
  // cannot name a reused pid, whichever thread reaps meanwhile.
  void Kill() override { ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0); }

  Result<RunResult> Wait() override {
    Reap();
    RunResult result;
    if (WIFEXITED(status_)) {
      result.status = RunStatus::kExited;
      result.exit_code = WEXITSTATUS(status_);
    } else {
      result.status = RunStatus::kSignaled;
      result.signal = WTERMSIG(status_);
    }
    return result;
  }

 private:
  void Reap() {
    if (reaped_) return;
    // Wait for the exit without reaping: until the reap, the pid (so the group id) cannot be
    // reused, so the SIGKILL reaches only whatever the driver left in its group.
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    ::kill(-pid_, SIGKILL);
    WaitForChild(pid_, &status_);
    reaped_ = true;
    if (parent_.joinable()) parent_.join();  // it returned when the driver exited
  }

  pid_t pid_;
  UniqueFd pidfd_;
  std::thread parent_;
  int status_ = 0;
  bool reaped_ = false;
};

}  // namespace

Result<std::unique_ptr<DriverProcess>> StartSandboxedDriver(RunSpec spec) {
  SBX_ASSIGN_OR_RETURN(auto sockets, MakeSocketPair());
  UniqueFd cancel(::eventfd(0, EFD_CLOEXEC));
  UniqueFd ended(::eventfd(0, EFD_CLOEXEC));
  if (!cancel || !ended) return SysError(ErrorCode::kIo, "eventfd");
  return std::unique_ptr<DriverProcess>(
      new SandboxedDriver(std::move(spec), std::move(sockets), std::move(cancel), std::move(ended)));
}

Result<std::unique_ptr<DriverProcess>> StartLocalDriver(const std::vector<std::string>& argv,
                                                        const std::string& workspace_dir) {
  if (argv.empty()) return InvalidInput("local driver: empty argv");
  SBX_ASSIGN_OR_RETURN(auto sockets, MakeSocketPair());
  // Everything the child needs is built before fork: the child of a threaded process must not
  // allocate.
  std::vector<std::string> env;
  for (const std::string& entry : BuildSandboxEnvironment({{"HOME", workspace_dir}})) {
    if (entry.rfind("MPLCONFIGDIR=", 0) != 0) env.push_back(entry);  // the image's, not here
  }
  std::vector<char*> argv_ptrs, env_ptrs;
  for (const std::string& arg : argv) argv_ptrs.push_back(const_cast<char*>(arg.c_str()));
  for (const std::string& entry : env) env_ptrs.push_back(const_cast<char*>(entry.c_str()));
  argv_ptrs.push_back(nullptr);
  env_ptrs.push_back(nullptr);
  const pid_t parent = ::getpid();
  // The driver's own stdout and stderr (cell markers, its own errors) are not the caller's.
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return SysError(ErrorCode::kIo, "open(/dev/null)");

  // The driver is forked by a thread that lives as long as it does: Linux sends the
  // parent-death signal when the forking thread exits, not the process, so a driver forked by
  // a caller's short-lived thread would be killed with that thread.
  struct Forked {
    pid_t pid = -1;  // -1: `error` says why
    UniqueFd pidfd;
    Error error;
  };
  std::promise<Forked> forked;
  std::future<Forked> started = forked.get_future();
  std::thread parent_thread([&, promise = std::move(forked)]() mutable {
    pid_t pid = ::fork();
    if (pid < 0) {
      promise.set_value(Forked{-1, {}, SysError(ErrorCode::kIo, "fork")});
      return;
    }
    if (pid == 0) {
      ::setsid();
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);
      if (::dup2(sockets.driver.get(), 0) < 0 || ::dup2(dev_null.get(), 1) < 0 ||
          ::dup2(dev_null.get(), 2) < 0 || ::chdir(workspace_dir.c_str()) != 0) {
        ::_exit(126);
      }
      ::execve(argv_ptrs[0], argv_ptrs.data(), env_ptrs.data());
      ::_exit(127);
    }
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) {
      int saved = errno;
      KillAndWaitForChild(pid, -1);
      promise.set_value(Forked{-1, {}, SysError(ErrorCode::kUnavailable, "pidfd_open", saved)});
      return;
    }
    const int watched = pidfd.get();  // the LocalDriver's, open until it has joined us
    promise.set_value(Forked{pid, std::move(pidfd), {}});
    // Returns once the driver has exited (or was reaped: ECHILD), never for a reused pid.
    siginfo_t info{};
    while (::waitid(P_PIDFD, static_cast<id_t>(watched), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
  });
  Forked child = started.get();
  if (child.pid < 0) {
    parent_thread.join();
    return child.error;
  }
  return std::unique_ptr<DriverProcess>(
      new LocalDriver(std::move(sockets.host), child.pid, std::move(child.pidfd), std::move(parent_thread)));
}

}  // namespace sbx::executor
