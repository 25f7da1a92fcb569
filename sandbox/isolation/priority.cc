// Lowers the scheduling priority the runner handed to the sandbox.
#include "sandbox/isolation/priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace sbx {
namespace {

// <linux/ioprio.h>'s encoding, which glibc does not wrap.
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioClassShift = 13;
constexpr int kIoprioClassRealTime = 1;

// A policy that cannot be read is set all the same: SCHED_OTHER is allowed to every task.
Result<void> LowerPolicy(pid_t child) {
  const int policy = ::sched_getscheduler(0);
  const int base = policy & ~SCHED_RESET_ON_FORK;
  if (policy >= 0 && base != SCHED_FIFO && base != SCHED_RR && base != SCHED_DEADLINE) return Ok{};
  const sched_param normal{};
  if (::sched_setscheduler(child, SCHED_OTHER, &normal) != 0)
    return SysError(ErrorCode::kSetupFailed, "priority: the real-time policy: sched_setscheduler");
  return Ok{};
}

Result<void> LowerNice(pid_t child) {
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, 0);  // this thread's, which the clone copied
  if (nice >= 0 || errno != 0) return Ok{};
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(child), 0) != 0)
    return SysError(ErrorCode::kSetupFailed, "priority: the negative nice value: setpriority");
  return Ok{};
}

Result<void> LowerIoClass(pid_t child) {
  const long ioprio = ::syscall(SYS_ioprio_get, kIoprioWhoProcess, 0);
  if (ioprio < 0 || (ioprio >> kIoprioClassShift) != kIoprioClassRealTime) return Ok{};
  if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, child, 0) != 0)
    return SysError(ErrorCode::kSetupFailed, "priority: the real-time I/O class: ioprio_set");
  return Ok{};
}

}  // namespace

Result<void> LowerInheritedPriorityInParent(pid_t child) {
  SBX_TRY(LowerPolicy(child));
  SBX_TRY(LowerNice(child));
  return LowerIoClass(child);
}

}  // namespace sbx
