// The record a sandbox child sends to the parent over the CLOEXEC sync socket.
//
// Between clone() and execve() nothing allocates: a failing step writes one fixed-size
// ChildReport and _exits. The sandbox's init also uses it to report how the program ended.
// EOF on the socket with no report means the child is gone without a word (killed).
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace sbx {

enum class ChildStep : uint32_t {
  kWaitForParent = 1,
  kMountPrivate,
  kMountScratch,
  kMountImage,
  kMountOverlay,
  kMountWorkspace,
  kMountProc,
  kMaskProc,
  kMountDev,
  kMountTmp,
  kPivotRoot,
  kHostname,
  kLoopback,
  kCgroupNamespace,
  kForkPayload,
  kSetsid,
  kStdio,
  kRlimits,
  kSetIds,
  kDropCapabilities,
  kNoNewPrivs,
  kChdirWorkspace,
  kCloseFds,
  kSeccomp,
  kExec,
  kInitSignals,
  kNetworkRoutes,
  kNetworkRedirect,
  kNetworkCapture,
  kResolvConf,
  kCaBundle,
};

enum class ReportKind : uint32_t {
  kSetupFailed = 1,  // step + err_no: a setup step failed, nothing of the program ran
  kExecFailed,       // err_no: execve of the program failed (ENOENT -> 127, else 126)
  kProgramEnded,     // value: the program's wait status, as seen by the sandbox's init;
                     // cpu_us, max_rss_kib: what the sandbox's processes used
};

struct ChildReport {
  ReportKind kind;
  ChildStep step;
  int32_t err_no;
  int32_t value;
  // kProgramEnded: the init's getrusage() of itself and of everything it reaped, which is
  // every process of the namespace by then. It is what wait4() on the init would return, so
  // the runner need not wait for the init's exit (the namespaces' teardown) to account the run.
  uint64_t cpu_us;
  uint64_t max_rss_kib;
  uint32_t flags;  // kProgramEnded: kReportRootMoved
};

// The root was entered by moving it over "/" and chroot, because the kernel refused
// pivot_root (ApplyMountsInChild); the result's enforcement says so.
inline constexpr uint32_t kReportRootMoved = 1;

const char* ChildStepName(ChildStep step);

// User plus system time of `usage`, in microseconds.
uint64_t CpuMicroseconds(const struct rusage& usage);

// Async-signal-safe: writes `report` to `fd` (retrying EINTR). Used only in children.
void SendChildReport(int fd, const ChildReport& report);
void SendChildReport(int fd, ReportKind kind, ChildStep step, int err_no, int value = 0);

}  // namespace sbx
