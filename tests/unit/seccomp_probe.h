// Test helper: runs one syscall probe in a forked child, with or without the seccomp filter.
//
// Usage:
//   auto filtered = RunProbe(Filter::kOn, [] { return syscall(SYS_unshare, 0x1); });
//   auto control = RunProbe(Filter::kOff, ...same probe...);
//   EXPECT_EQ(filtered.err, EPERM);  EXPECT_EQ(control.err, EINVAL);
// The child calls setsid() first (so no probe can reach the test's terminal), sets
// no_new_privs, installs the filter, runs the probe, and reports {result, errno} over a pipe.
#pragma once

#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ostream>

#include "sandbox/seccomp/seccomp_filter.h"

namespace sbx::testing {

enum class Filter { kOff, kOn };

struct ProbeOutcome {
  bool reported = false;  // the probe ran to completion and wrote its record
  long ret = 0;
  int err = 0;          // errno after the probe, 0 when it succeeded
  int wait_status = 0;  // of the child
  bool KilledBy(int sig) const { return WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == sig; }
};

inline std::ostream& operator<<(std::ostream& os, const ProbeOutcome& o) {
  return os << "{reported=" << o.reported << " ret=" << o.ret << " errno=" << o.err << " status=0x"
            << std::hex << o.wait_status << std::dec << "}";
}

inline const SeccompProgram& TestProgram(const SeccompOptions& options = {}) {
  auto program = CompileSeccompProgram(options);
  if (!program) {
    ADD_FAILURE() << program.error().ToString();
    static const SeccompProgram kEmpty;
    return kEmpty;
  }
  return **program;
}

template <typename Probe>
ProbeOutcome RunProbe(Filter filter, Probe probe, const SeccompOptions& options = {}) {
  const SeccompProgram& program = TestProgram(options);
  ProbeOutcome outcome;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2 failed";
    return outcome;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    setsid();
    const rlimit no_core = {0, 0};  // SIGSYS would otherwise dump core
    setrlimit(RLIMIT_CORE, &no_core);
    long record[2] = {-1, 0};
    if (filter == Filter::kOn) {
      int err =
          prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? InstallSeccompInChild(program) : errno;
      if (err != 0) _exit(100 + (err & 0x1f));
    }
    errno = 0;
    record[0] = static_cast<long>(probe());
    record[1] = errno;
    if (write(fds[1], record, sizeof(record)) != sizeof(record)) _exit(99);
    _exit(0);
  }
  close(fds[1]);
  long record[2];
  ssize_t n;
  do {
    n = read(fds[0], record, sizeof(record));
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n == sizeof(record)) {
    outcome.reported = true;
    outcome.ret = record[0];
    outcome.err = record[0] < 0 ? static_cast<int>(record[1]) : 0;
  }
  while (waitpid(pid, &outcome.wait_status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(outcome.wait_status) && WEXITSTATUS(outcome.wait_status) >= 100) {
    ADD_FAILURE() << "installing the filter failed with errno "
                  << WEXITSTATUS(outcome.wait_status) - 100;
  }
  return outcome;
}

}  // namespace sbx::testing
