// The record a sandbox child sends to the parent over the CLOEXEC sync socket.
//
// Between clone() and execve() nothing allocates: a failing step writes one fixed-size
// ChildReport and _exits. The sandbox's init also uses it to report how the program ended.
// EOF on the socket with no report means the child is gone without a word (killed).
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace sbx {

// In the order of the launch sequence (launcher.h), whose step each belongs to is LaunchStepOf;
// a unit test holds the two together.
enum class ChildStep : uint32_t {
  kWaitForParent = 1,  // 6
  kPersonality,
  kOomScore,
  kOpenSources,
  kSetupIds,
  kMountPrivate,  // 7
  kMountScratch,
  kMountImage,
  kMountOverlay,  // 8
  kSessionLibrary,
  kResolvConf,
  kCaBundle,
  kMountWorkspace,
  kMountProc,  // 9
  kMaskProc,
  kMountDev,
  kMountTmp,
  kPivotRoot,  // 10
  kHostname,   // 11
  kLoopback,
  kNetworkRoutes,
  kNetworkRedirect,
  kNetworkCapture,
  kCgroupNamespace,  // 12
  kInitSignals,      // 13
  kSpawnProgram,
  kSetsid,  // 14
  kStdio,
  kRlimits,           // 15
  kDropCapabilities,  // 16
  kSetIds,
  kNoNewPrivs,
  kChdirWorkspace,  // 17
  kCloseFds,
  kSeccomp,  // 18
  kExec,     // 19
};
inline constexpr ChildStep kLastChildStep = ChildStep::kExec;

// The step of launcher.h's launch sequence that `step` is part of (6-19). Some are met again
// later (the init drops its ids and capabilities at 20 with kSetIds and kDropCapabilities).
constexpr int LaunchStepOf(ChildStep step) {
  switch (step) {
    case ChildStep::kWaitForParent:
    case ChildStep::kPersonality:
    case ChildStep::kOomScore:
    case ChildStep::kOpenSources:
    case ChildStep::kSetupIds: return 6;
    case ChildStep::kMountPrivate:
    case ChildStep::kMountScratch:
    case ChildStep::kMountImage: return 7;
    case ChildStep::kMountOverlay:
    case ChildStep::kSessionLibrary:
    case ChildStep::kResolvConf:
    case ChildStep::kCaBundle:
    case ChildStep::kMountWorkspace: return 8;
    case ChildStep::kMountProc:
    case ChildStep::kMaskProc:
    case ChildStep::kMountDev:
    case ChildStep::kMountTmp: return 9;
    case ChildStep::kPivotRoot: return 10;
    case ChildStep::kHostname:
    case ChildStep::kLoopback:
    case ChildStep::kNetworkRoutes:
    case ChildStep::kNetworkRedirect:
    case ChildStep::kNetworkCapture: return 11;
    case ChildStep::kCgroupNamespace: return 12;
    case ChildStep::kInitSignals:
    case ChildStep::kSpawnProgram: return 13;
    case ChildStep::kSetsid:
    case ChildStep::kStdio: return 14;
    case ChildStep::kRlimits: return 15;
    case ChildStep::kDropCapabilities:
    case ChildStep::kSetIds:
    case ChildStep::kNoNewPrivs: return 16;
    case ChildStep::kChdirWorkspace:
    case ChildStep::kCloseFds: return 17;
    case ChildStep::kSeccomp: return 18;
    case ChildStep::kExec: return 19;
  }
  return 0;
}

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
