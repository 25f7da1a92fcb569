// The supervision loop: poll on the pipes, the sync socket and the init's pidfd.
#include "sandbox/launch/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "sandbox/launch/child_wait.h"

namespace sbx {
namespace {

uint64_t NowNs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void SignalThroughPidfd(int pidfd, int signal) {
  ::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0);
}

// One read per ready pipe per poll round, so a program that writes as fast as it can still
// lets the loop reach its deadline check. Returns false at EOF or on a hard error.
bool DrainOnce(int fd, OutputCapture& capture) {
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      capture.Append(buffer, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

void ReadReports(int fd, SupervisionOutcome& outcome, bool& open) {
  for (;;) {
    ChildReport report{};
    ssize_t n = ::recv(fd, &report, sizeof(report), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n != static_cast<ssize_t>(sizeof(report))) {
      open = false;
      return;
    }
    switch (report.kind) {
      case ReportKind::kSetupFailed:
        if (!outcome.setup_failure) outcome.setup_failure = report;
        break;
      case ReportKind::kExecFailed: outcome.exec_errno = report.err_no; break;
      case ReportKind::kProgramEnded:
        outcome.program_status = report.value;
        outcome.cpu_us = report.cpu_us;
        outcome.max_rss_kib = report.max_rss_kib;
        outcome.report_flags = report.flags;
        break;
    }
  }
}

// Ends the sandbox. A namespaced init by SIGKILL: its death ends the pid namespace. An outer
// init by its stop byte: it kills and reaps the tree, then exits. The cgroup's kill (v2) is a
// second net for both.
void StopSandbox(const SupervisedChild& child, const std::function<void()>& kill_all) {
  if (child.init_kills_tree) {
    // MSG_NOSIGNAL: an init that has exited already must not raise SIGPIPE in a library user.
    const char stop = 'k';
    (void)!::send(child.sync_fd, &stop, 1, MSG_NOSIGNAL);
    kill_all();
  } else {
    kill_all();
    SignalThroughPidfd(child.pidfd, SIGKILL);
  }
}

}  // namespace

void ReapInit(const SupervisedChild& child, SupervisionOutcome& outcome) {
  struct rusage usage {};
  const pid_t reaped = WaitForChild(child.pid, &outcome.init_status, &usage);
  outcome.init_exiting = false;
  if (reaped != child.pid || outcome.program_status) return;  // the init's report is as good
  outcome.cpu_us = CpuMicroseconds(usage);
  outcome.max_rss_kib = static_cast<uint64_t>(usage.ru_maxrss);
}

SupervisionOutcome Supervise(const SupervisedChild& child, OutputCapture& out, OutputCapture& err,
                             double timeout_seconds, double grace_seconds,
                             const std::function<void()>& kill_all) {
  SupervisionOutcome outcome;
  const uint64_t start = NowNs();
  const uint64_t deadline = start + static_cast<uint64_t>(timeout_seconds * 1e9);
  uint64_t kill_deadline = 0;
  bool killed = false;
  for (int fd : {child.stdout_fd, child.stderr_fd, child.sync_fd})
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  bool out_open = true, err_open = true, sync_open = true, init_alive = true;
  while (init_alive || out_open || err_open) {
    struct pollfd fds[6];
    int count = 0;
    int out_index = -1, err_index = -1, sync_index = -1, pid_index = -1, cancel_index = -1,
        helper_index = -1;
    if (out_open) { out_index = count; fds[count++] = {child.stdout_fd, POLLIN, 0}; }
    if (err_open) { err_index = count; fds[count++] = {child.stderr_fd, POLLIN, 0}; }
    if (sync_open) { sync_index = count; fds[count++] = {child.sync_fd, POLLIN, 0}; }
    if (init_alive) { pid_index = count; fds[count++] = {child.pidfd, POLLIN, 0}; }
    if (init_alive && kill_deadline == 0 && child.cancel_fd >= 0) {
      cancel_index = count;
      fds[count++] = {child.cancel_fd, POLLIN, 0};
    }
    if (init_alive && !killed && child.helper_fd >= 0) {
      helper_index = count;
      fds[count++] = {child.helper_fd, POLLIN, 0};
    }

    int wait_ms = 5000;  // after the reap: writers are gone, EOF is due; never hang on it
    if (init_alive) {
      uint64_t now = NowNs();
      uint64_t next = kill_deadline != 0 ? kill_deadline : deadline;
      if (killed) {
        wait_ms = 100;  // the kernel is tearing the namespace down
      } else {
        wait_ms = now >= next ? 0 : static_cast<int>(std::min<uint64_t>((next - now) / 1000000 + 1, 60000));
      }
    }
    int ready = ::poll(fds, static_cast<nfds_t>(count), wait_ms);
    if (ready < 0 && errno != EINTR) break;  // the init is killed and reaped below
    if (ready == 0 && !init_alive) break;

    if (out_index >= 0 && fds[out_index].revents) out_open = DrainOnce(child.stdout_fd, out);
    if (err_index >= 0 && fds[err_index].revents) err_open = DrainOnce(child.stderr_fd, err);
    if (sync_index >= 0 && fds[sync_index].revents) ReadReports(child.sync_fd, outcome, sync_open);
    if (pid_index >= 0 && fds[pid_index].revents) {
      ReapInit(child, outcome);
      init_alive = false;
      outcome.wall_ns = NowNs() - start;
      // Every process of the namespace is gone now; pick up the last reports.
      if (sync_open) ReadReports(child.sync_fd, outcome, sync_open);
      continue;
    }
    if (init_alive && outcome.program_status) {
      // The init's last act: everything else is reaped, its own exit is under way.
      SignalThroughPidfd(child.pidfd, SIGKILL);  // should it linger, it ends all the same
      init_alive = false;
      outcome.init_exiting = true;
      outcome.wall_ns = NowNs() - start;
      continue;
    }
    if (!init_alive) continue;
    uint64_t now = NowNs();
    bool cancel = cancel_index >= 0 && fds[cancel_index].revents != 0;
    if (helper_index >= 0 && fds[helper_index].revents != 0 && !killed) {
      // No grace: without its helper the run's network policy is not enforced any more.
      outcome.helper_died = true;
      StopSandbox(child, kill_all);
      killed = true;
    } else if (kill_deadline == 0 && !killed && (now >= deadline || cancel)) {
      (now >= deadline ? outcome.timed_out : outcome.cancelled) = true;
      SignalThroughPidfd(child.pidfd, SIGTERM);  // the init forwards SIGCONT + SIGTERM
      kill_deadline = now + static_cast<uint64_t>(std::max(0.0, grace_seconds) * 1e9);
    } else if (kill_deadline != 0 && !killed && now >= kill_deadline) {
      StopSandbox(child, kill_all);
      killed = true;
    }
  }
  if (init_alive) {
    // Only a failing poll gets here: never leave a sandbox running unsupervised.
    StopSandbox(child, kill_all);
    ReapInit(child, outcome);
    outcome.wall_ns = NowNs() - start;
  }
  if (sync_open) ReadReports(child.sync_fd, outcome, sync_open);
  out.Finish();
  err.Finish();
  return outcome;
}

}  // namespace sbx
