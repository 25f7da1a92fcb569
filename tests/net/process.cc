// Bounded commands and process-group servers for the network tests.
#include "tests/net/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/unique_fd.h"

namespace sbx::nettest {
namespace {

constexpr char kPath[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

double Now() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int StatusToExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Everything the child needs, built before fork() so the child only makes syscalls.
struct ExecPlan {
  std::vector<char*> argv;
  char* envp[2] = {const_cast<char*>(kPath), nullptr};
  explicit ExecPlan(const std::vector<std::string>& args) {
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
  }
};

// Forks a child in its own process group with stdin /dev/null and stdout/stderr on the
// given fds; the child dies with this process.
Result<pid_t> Spawn(const ExecPlan& plan, int out_fd, int err_fd) {
  UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_fd) return SysError(ErrorCode::kIo, "open(/dev/null)");
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return SysError(ErrorCode::kIo, "fork");
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    if (::dup2(null_fd.get(), 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0)
      ::_exit(126);
    ::execve(plan.argv[0], plan.argv.data(), const_cast<char**>(plan.envp));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no window in which a kill of the group misses the child
  return pid;
}

pid_t WaitRetry(pid_t pid, int* status, int flags) {
  pid_t got;
  do {
    got = ::waitpid(pid, status, flags);
  } while (got < 0 && errno == EINTR);
  return got;
}

}  // namespace

Result<CommandResult> RunBounded(const std::vector<std::string>& argv, double timeout_seconds) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/')
    return InvalidInput("RunBounded: argv[0] must be an absolute path");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return SysError(ErrorCode::kIo, "pipe2");
  UniqueFd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return SysError(ErrorCode::kIo, "pipe2");
  UniqueFd err_read(err_pipe[0]), err_write(err_pipe[1]);
  ExecPlan plan(argv);
  auto pid = Spawn(plan, out_write.get(), err_write.get());
  if (!pid) return pid.error().Context(argv[0]);
  out_write.reset();
  err_write.reset();

  CommandResult result;
  const double deadline = Now() + timeout_seconds;
  double give_up = deadline + 5;  // after the kill, how long orphans may hold the pipes
  struct pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  while (open_count > 0) {
    double now = Now();
    if (!result.timed_out && now >= deadline) {
      result.timed_out = true;
      ::kill(-*pid, SIGKILL);
    }
    if (now >= give_up) break;
    double until = result.timed_out ? give_up : deadline;
    int ready = ::poll(fds, 2, static_cast<int>((until - now) * 1000) + 1);
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[16384];
      ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  // The pipes are closed (or given up on); the child gets what is left of the deadline.
  int status = 0;
  pid_t reaped;
  while ((reaped = WaitRetry(*pid, &status, WNOHANG)) == 0) {
    if (Now() >= deadline) {
      result.timed_out = true;
      ::kill(-*pid, SIGKILL);
      reaped = WaitRetry(*pid, &status, 0);
      break;
    }
    ::usleep(10000);
  }
  if (reaped == *pid) result.exit_code = StatusToExitCode(status);
  return result;
}

Result<ServerProcess> ServerProcess::Start(const std::vector<std::string>& argv,
                                           const std::string& log_path) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/')
    return InvalidInput("ServerProcess: argv[0] must be an absolute path");
  UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log) return SysError(ErrorCode::kIo, "open(" + log_path + ")");
  ExecPlan plan(argv);
  auto pid = Spawn(plan, log.get(), log.get());
  if (!pid) return pid.error().Context(argv[0]);
  ServerProcess server;
  server.pid_ = *pid;
  return server;
}

ServerProcess::ServerProcess(ServerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), reaped_(std::exchange(other.reaped_, false)) {}

ServerProcess& ServerProcess::operator=(ServerProcess&& other) noexcept {
  if (this != &other) {
    Stop();
    pid_ = std::exchange(other.pid_, -1);
    reaped_ = std::exchange(other.reaped_, false);
  }
  return *this;
}

bool ServerProcess::Running() {
  if (pid_ < 0 || reaped_) return false;
  int status = 0;
  reaped_ = WaitRetry(pid_, &status, WNOHANG) != 0;
  return !reaped_;
}

void ServerProcess::Stop() {
  if (pid_ < 0) return;
  // Signal the group even when the leader is gone: anything it started goes too. Until the
  // leader is reaped its pid, hence the group id, cannot be reused.
  ::kill(-pid_, SIGTERM);
  int status = 0;
  const double deadline = Now() + 2;
  while (!reaped_ && WaitRetry(pid_, &status, WNOHANG) == 0 && Now() < deadline) ::usleep(10000);
  ::kill(-pid_, SIGKILL);
  if (!reaped_) WaitRetry(pid_, &status, 0);
  pid_ = -1;
  reaped_ = false;
}

}  // namespace sbx::nettest
