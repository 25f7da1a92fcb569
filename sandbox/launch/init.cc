// The sandbox's init process (pid 1 of the run's pid namespace).
#include "sandbox/launch/init.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "sandbox/launch/child_report.h"
#include "sandbox/launch/process_tree.h"

namespace sbx {
namespace {

sigset_t InitSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

void SignalEveryone(int signal) {
  if (::getpid() == 1) ::kill(-1, signal);
}

// The program's end, with what every process of the namespace used: the init's own usage
// plus its reaped children's, as wait4() on the init would sum them.
void ReportProgramEnded(int sync_fd, int program_status, uint32_t flags) {
  struct rusage self {}, children {};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  ChildReport report{ReportKind::kProgramEnded, ChildStep::kExec, 0, program_status, 0, 0, flags};
  report.cpu_us = CpuMicroseconds(self) + CpuMicroseconds(children);
  report.max_rss_kib = static_cast<uint64_t>(self.ru_maxrss > children.ru_maxrss ? self.ru_maxrss
                                                                                 : children.ru_maxrss);
  SendChildReport(sync_fd, report);
}

[[noreturn]] void KillEveryoneAndExit(int sync_fd, bool report, int program_status, uint32_t flags) {
  SignalEveryone(SIGKILL);
  // With nothing to report, exiting is the surer kill: the kernel then SIGKILLs the whole
  // namespace. kill(-1) from this unprivileged init fails with EPERM on a program still in
  // its setup under another uid (root mode), and waiting for it would hang.
  if (!report) ::_exit(0);
  while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  // ECHILD: every other process of the namespace is reaped. From this report on the runner
  // does not wait for this exit, whose namespace teardown it need not pay for.
  ReportProgramEnded(sync_fd, program_status, flags);
  ::_exit(0);
}

}  // namespace

int BlockInitSignals() {
  sigset_t set = InitSignals();
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return -errno;
  int fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  return fd >= 0 ? fd : -errno;
}

namespace {

// The init's wait, shared by both kinds of run: forwards a stop request (SIGTERM, SIGINT,
// SIGHUP) as SIGCONT then SIGTERM through `signal_all`, reaps every child, and returns when
// the program ends (true, its wait status in `program_status`) or the parent is gone (false:
// it never writes after "go", so `sync_fd` readable or hung up both mean that).
bool WaitForProgramOrParent(int sync_fd, pid_t program_pid, int signal_fd, void (*signal_all)(int),
                            int* program_status) {
  struct pollfd fds[2] = {{signal_fd, POLLIN, 0}, {sync_fd, POLLIN, 0}};
  for (;;) {
    const int ready = ::poll(fds, 2, -1);
    if ((ready < 0 && errno != EINTR) || (ready > 0 && fds[1].revents != 0)) return false;
    if (ready <= 0 || fds[0].revents == 0) continue;
    struct signalfd_siginfo info;
    while (::read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
      if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT || info.ssi_signo == SIGHUP) {
        signal_all(SIGCONT);
        signal_all(SIGTERM);
      }
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid != program_pid) continue;  // an orphan
      *program_status = status;
      return true;
    }
  }
}

}  // namespace

void RunInitInChild(int sync_fd, pid_t program_pid, int signal_fd, uint32_t report_flags) {
  int status = 0;
  const bool ended = WaitForProgramOrParent(sync_fd, program_pid, signal_fd, SignalEveryone, &status);
  KillEveryoneAndExit(sync_fd, ended, status, ended ? report_flags : 0);
}

void RunOuterInitInChild(int sync_fd, pid_t program_pid, int signal_fd) {
  int status = 0;
  bool program_ended = WaitForProgramOrParent(sync_fd, program_pid, signal_fd,
                                              [](int signal) { SignalDescendants(signal); }, &status);
  const bool report = program_ended;  // the parent gone: nobody reads a report
  KillDescendantsAndReap(program_pid, &status, &program_ended);
  if (report) ReportProgramEnded(sync_fd, status, 0);
  ::_exit(0);
}

}  // namespace sbx
