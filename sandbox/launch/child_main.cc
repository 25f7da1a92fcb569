// The child side of the launch: namespaces are already there; this builds the rest, forks
// the program and becomes the sandbox's init.
#include "sandbox/launch/child_main.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/isolation/close_fds.h"
#include "sandbox/isolation/loopback.h"
#include "sandbox/isolation/oom_score.h"
#include "sandbox/isolation/personality.h"
#include "sandbox/isolation/privileges.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/launch/init.h"
#include "sandbox/launch/process_tree.h"
#include "sandbox/launch/signal_reset.h"

namespace sbx {
namespace {

[[noreturn]] void FailSetup(int sync_fd, ChildStep step, int err) {
  SendChildReport(sync_fd, ReportKind::kSetupFailed, step, err);
  ::_exit(125);
}

// Sheds root's supplementary groups (root mode only), then becomes uid/gid 1000.
int SwitchToSetupIds(bool root_mode) { return SetIdsInChild(root_mode ? 0 : kSandboxId, false); }

// The bounding and ambient sets go in the init before it spawns the program, which inherits
// them empty: one process drops them (a system call per capability) instead of two. Not when
// the program keeps its namespace capabilities; the init then drops them after the spawn.
bool BoundingSetGoesBeforeSpawn(const ChildPlan& plan) { return !plan.keep_namespace_capabilities; }

void DropBoundingSetBeforeSpawn(const ChildPlan& plan) {
  if (!BoundingSetGoesBeforeSpawn(plan)) return;
  if (int err = DropBoundingAndAmbientInChild(plan.capabilities))
    FailSetup(plan.sync_fd, ChildStep::kDropCapabilities, err);
}

// Who sheds ids, capabilities and the right to gain privileges before the program exists.
// A namespaced init drops them itself, before the spawn, and the program inherits the result:
// nothing in the sandbox ever runs beside an init that still holds a capability. An outer init
// stays uid 0 (the program, uid 1000, then cannot signal it), so there the program drops its
// own; a zygote's program keeps its namespace capabilities, so its init drops after the spawn.
bool InitDropsBeforeSpawn(const ChildPlan& plan) { return !plan.outer && !plan.keep_namespace_capabilities; }

// Ids, capabilities, no_new_privs: in the init (namespaced) or in the program (outer).
void DropPrivileges(const ChildPlan& plan) {
  ChildStep step = ChildStep::kDropCapabilities;
  const int err = BoundingSetGoesBeforeSpawn(plan)
                      ? DropIdsAndCapabilitiesInChild(plan.root_mode, &step)
                      : DropPrivilegesInChild(plan.capabilities, plan.root_mode, &step);
  if (err != 0) FailSetup(plan.sync_fd, step, err);
}

// A namespaced init's own drop, and not dumpable again: an id change resets dumpability to the
// host's fs.suid_dumpable, and the init's /proc entries (exe points at the runner's binary) must
// stay closed to the program.
void DropInitPrivileges(const ChildPlan& plan) {
  DropPrivileges(plan);
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) FailSetup(plan.sync_fd, ChildStep::kSetIds, errno);
}

// The caller's umask belongs to the runner, not to the sandbox: under 077 the mount points made
// below would be 0700, so the sandbox's user could not reach its own root, and the program's
// files would be closed to its other users. The sandbox starts with 022, as a container
// runtime's processes do. Its personality flags and a negative OOM score adjustment stay outside
// too (personality.h, oom_score.h), taken here while this process is dumpable and its /proc files
// its own.
void LeaveTheCallersStateOutside(int sync_fd) {
  ::umask(022);
  if (int err = UseTheSandboxPersonalityInChild()) FailSetup(sync_fd, ChildStep::kPersonality, err);
  if (int err = RaiseInheritedOomScoreInChild()) FailSetup(sync_fd, ChildStep::kOomScore, err);
}

// The init keeps only its two descriptors.
int CloseAllExcept(int keep_a, int keep_b) {
  const int keep[] = {keep_a < keep_b ? keep_a : keep_b, keep_a < keep_b ? keep_b : keep_a};
  return CloseAllFdsExcept(keep, 2);
}

// Runs in the vfork-style child (see SpawnProgram), which shares the init's memory until its
// execve: only syscalls and writes to its own stack frames (and errno) from here on. Never
// inlined, so its locals live in frames of its own, below the caller's, which the init reuses.
[[noreturn, gnu::noinline]] void ExecProgram(const ChildPlan& plan) {
  sigset_t none;
  sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0)
    FailSetup(plan.sync_fd, ChildStep::kInitSignals, errno);
  if (::setsid() < 0) FailSetup(plan.sync_fd, ChildStep::kSetsid, errno);
  if (::dup2(plan.stdin_fd, 0) < 0 || ::dup2(plan.stdout_fd, 1) < 0 || ::dup2(plan.stderr_fd, 2) < 0)
    FailSetup(plan.sync_fd, ChildStep::kStdio, errno);
  if (int err = ApplyRlimitsInChild(plan.rlimits)) FailSetup(plan.sync_fd, ChildStep::kRlimits, err);
  if (plan.keep_namespace_capabilities) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) FailSetup(plan.sync_fd, ChildStep::kNoNewPrivs, errno);
  } else if (!InitDropsBeforeSpawn(plan)) {
    DropPrivileges(plan);
  }
  const int entered = plan.outer ? ::fchdir(plan.workspace_fd) : ::chdir("/workspace");
  if (entered != 0) FailSetup(plan.sync_fd, ChildStep::kChdirWorkspace, errno);
  // Mark instead of close so the sync socket stays usable until execve succeeds.
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
    FailSetup(plan.sync_fd, ChildStep::kCloseFds, errno);
  if (plan.seccomp != nullptr && !plan.keep_namespace_capabilities) {
    if (int err = InstallSeccompInChild(*plan.seccomp)) FailSetup(plan.sync_fd, ChildStep::kSeccomp, err);
  }
  int exec_errno = ENOENT;
  for (const std::string& candidate : plan.exec_candidates) {
    ::execve(candidate.c_str(), plan.argv.data(), plan.envp.data());
    // Keep the most telling failure: "exists but cannot run" beats "not here".
    if (errno != ENOENT && errno != ENOTDIR) exec_errno = errno;
  }
  SendChildReport(plan.sync_fd, ReportKind::kExecFailed, ChildStep::kExec, exec_errno);
  ::_exit(exec_errno == ENOENT ? 127 : 126);
}

// 13. The program is a vfork-style child: it shares the init's memory until its execve, so
//     no page tables are copied and none of its writes takes a copy-on-write fault (dear on
//     hosts where page faults are slow, as under shadow paging; docs/performance.md). The
//     init sleeps meanwhile. Without CLONE_FS, CLONE_FILES, CLONE_SIGHAND or CLONE_THREAD,
//     what the child changes (ids, capabilities, fds, rlimits, cwd, seccomp, handlers) is its
//     own. Every handler and ignored signal inherited from the runner is reset first, with all
//     signals blocked: no handler can then run on the shared memory, nor in the init, where
//     the program (same uid in rootless mode) could trigger one; an init of a pid namespace
//     drops default-action signals from inside it.
//     The init's mask is restored afterwards. The program starts with no signal blocked or
//     ignored, whatever the runner's thread had (a library user may block signals for a
//     signalfd of its own). Returns the program's pid, or -errno.
pid_t SpawnProgram(const ChildPlan& plan) {
  sigset_t all, init_mask;
  sigfillset(&all);
  if (::sigprocmask(SIG_SETMASK, &all, &init_mask) != 0) return -errno;
  ResetSignalDispositionsInChild();
  pid_t program = ::vfork();
  if (program == 0) ExecProgram(plan);  // 14-19 in the program
  const int spawn_errno = errno;
  ::sigprocmask(SIG_SETMASK, &init_mask, nullptr);
  return program > 0 ? program : -spawn_errno;
}

// One message from the parent (SOCK_SEQPACKET: one read per message). False on EOF.
bool WaitForParent(int sync_fd) {
  char message = 0;
  ssize_t got;
  do {
    got = ::read(sync_fd, &message, 1);
  } while (got < 0 && errno == EINTR);
  return got == 1;
}

}  // namespace

void ChildPlan::Seal() {
  argv.clear();
  envp.clear();
  for (auto& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  for (auto& entry : env_storage) envp.push_back(entry.data());
  envp.push_back(nullptr);
}

namespace {

// A failure once the program runs: without a pid namespace, the init's exit would leave the
// program's tree running, so it kills and reaps it first.
[[noreturn]] void FailOuterInit(int sync_fd, ChildStep step, int err) {
  SendChildReport(sync_fd, ReportKind::kSetupFailed, step, err);
  int status = 0;
  bool ended = false;
  KillDescendantsAndReap(-1, &status, &ended);
  ::_exit(125);
}

}  // namespace

void OuterChildMain(const ChildPlan& plan) {
  const int sync_fd = plan.sync_fd;
  // O6. No parent-death signal: a SIGKILLed init would orphan the program's tree. The runner's
  //     death shows as the sync socket's hang-up instead, on which the init kills the tree.
  ::close(plan.parent_sync_fd);
  LeaveTheCallersStateOutside(sync_fd);
  if (!WaitForParent(sync_fd)) ::_exit(125);
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) FailSetup(sync_fd, ChildStep::kWaitForParent, errno);
  // The program shares this process's pid namespace: /proc/<init>/cmdline is readable to it.
  HideRunnerStringsInChild(plan.runner_strings);
  // O7. Orphans of the program (double-forked daemons) become the init's children.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) FailSetup(sync_fd, ChildStep::kInitSignals, errno);
  // O8. v1: the parent moved this process into the run's cgroups meanwhile.
  if (!WaitForParent(sync_fd)) ::_exit(125);
  // O9. 13-19 as in a namespaced run.
  int signal_fd = BlockInitSignals();
  if (signal_fd < 0) FailSetup(sync_fd, ChildStep::kInitSignals, -signal_fd);
  DropBoundingSetBeforeSpawn(plan);
  const pid_t program = SpawnProgram(plan);
  if (program < 0) FailSetup(sync_fd, ChildStep::kSpawnProgram, -program);
  // O20. Still uid 0 (the program, uid 1000, cannot signal or trace it) with CAP_KILL alone, not
  // dumpable, no_new_privs, its two descriptors. The OOM killer spares it where the container
  // allows lowering the score (CAP_SYS_RESOURCE): its death would orphan the tree.
  int score = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (score >= 0) {
    (void)!::write(score, "-1000", 5);
    ::close(score);
  }
  if (!BoundingSetGoesBeforeSpawn(plan)) {
    if (int err = DropBoundingAndAmbientInChild(plan.capabilities))
      FailOuterInit(sync_fd, ChildStep::kDropCapabilities, err);
  }
  if (int err = KeepOnlyKillCapabilityInChild()) FailOuterInit(sync_fd, ChildStep::kDropCapabilities, err);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) FailOuterInit(sync_fd, ChildStep::kNoNewPrivs, errno);
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) FailOuterInit(sync_fd, ChildStep::kSetIds, errno);
  if (int err = CloseAllExcept(sync_fd, signal_fd)) FailOuterInit(sync_fd, ChildStep::kCloseFds, err);
  RunOuterInitInChild(sync_fd, program, signal_fd);
}

void SandboxChildMain(const ChildPlan& plan) {
  const int sync_fd = plan.sync_fd;
  // 6. Die with the runner. The parent's "ids mapped" message comes first; EOF instead means
  //    the runner is gone. The parent-death signal alone is not enough: in root mode the id
  //    switches below clear it, and a runner that dies before the init re-arms it goes
  //    unnoticed. Holding only our end of the socket makes the runner's death visible as a
  //    hang-up, which the init polls for.
  ::close(plan.parent_sync_fd);
  LeaveTheCallersStateOutside(sync_fd);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) FailSetup(sync_fd, ChildStep::kWaitForParent, errno);
  if (!WaitForParent(sync_fd)) ::_exit(125);
  // Not dumpable from here on, long before the program exists: until its execve this process
  // is a copy of the runner's memory (its environment included), and /proc/1/{mem,environ,fd}
  // must stay closed to the program. (Not earlier: a rootless parent needs our /proc files,
  // which non-dumpable hands to root, to write the id maps.) execve makes the program itself
  // dumpable again.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) FailSetup(sync_fd, ChildStep::kWaitForParent, errno);
  // /proc/1/cmdline is world-readable, dumpable or not: the runner's arguments and environment
  // strings in our copy of its memory go before anything of the sandbox can run.
  HideRunnerStringsInChild(plan.runner_strings);
  ChildStep step = ChildStep::kOpenSources;
  MountSources sources;
  if (int err = OpenMountSourcesInChild(plan.mounts, &sources, &step)) FailSetup(sync_fd, step, err);
  // Take mapped ids at once, so what the mounts below create has a mapped owner (an
  // unmapped one fails with EOVERFLOW): the namespace's root in root mode, else 1000, the
  // only id mapped. Leaving the unmapped host root keeps the namespace capabilities.
  if (int err = SwitchToSetupIds(plan.root_mode)) FailSetup(sync_fd, ChildStep::kSetupIds, err);
  // 7-10. The mount tree and pivot_root.
  bool root_moved = false;
  if (int err = ApplyMountsInChild(plan.mounts, sources, &step, &root_moved)) FailSetup(sync_fd, step, err);
  // 11. Hostname and loopback.
  if (::sethostname("sandbox", 7) != 0) FailSetup(sync_fd, ChildStep::kHostname, errno);
  if (plan.set_up_loopback) {
    if (int err = BringUpLoopbackInChild()) FailSetup(sync_fd, ChildStep::kLoopback, err);
  }
  if (plan.capture.enabled) {
    if (int err = SetUpCaptureInChild(plan.capture, &step)) FailSetup(sync_fd, step, err);
  }
  // 12. On cgroup v1 the parent moves this process into the run's cgroups while the steps
  //    above run (a move may wait for an RCU grace period); nothing of the program runs
  //    before "cgroup placed" arrives. Then a cgroup namespace rooted at the run's cgroup.
  if (!WaitForParent(sync_fd)) ::_exit(125);
  if (::unshare(CLONE_NEWCGROUP) != 0) FailSetup(sync_fd, ChildStep::kCgroupNamespace, errno);
  // 13. Spawn the program with SIGCHLD already blocked, so the init misses no exit.
  int signal_fd = BlockInitSignals();
  if (signal_fd < 0) FailSetup(sync_fd, ChildStep::kInitSignals, -signal_fd);
  DropBoundingSetBeforeSpawn(plan);
  // The init gives up everything before the program exists, which inherits it given up: no
  // capabilities, uid 1000, no_new_privs.
  if (InitDropsBeforeSpawn(plan)) DropInitPrivileges(plan);
  const pid_t program = SpawnProgram(plan);
  if (program < 0) FailSetup(sync_fd, ChildStep::kSpawnProgram, -program);
  // 20. The init keeps only its two descriptors. A zygote's init drops its privileges only now,
  // its program having kept the namespace's.
  if (!InitDropsBeforeSpawn(plan)) DropInitPrivileges(plan);
  if (int err = CloseAllExcept(sync_fd, signal_fd)) FailSetup(sync_fd, ChildStep::kCloseFds, err);
  RunInitInChild(sync_fd, program, signal_fd, root_moved ? kReportRootMoved : 0);
}

}  // namespace sbx
