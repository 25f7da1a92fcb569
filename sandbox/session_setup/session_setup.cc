// The pooled session's isolation steps: the cold path's child code, called from the zygote.
#include "sandbox/session_setup/session_setup.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/ascii.h"
#include "sandbox/fs/mounts.h"
#include "sandbox/isolation/capabilities.h"
#include "sandbox/isolation/close_fds.h"
#include "sandbox/isolation/loopback.h"
#include "sandbox/isolation/privileges.h"
#include "sandbox/isolation/rlimits.h"
#include "sandbox/launch/child_report.h"
#include "sandbox/launcher.h"
#include "sandbox/seccomp/seccomp_filter.h"

namespace sbx {
namespace {

// The zygote's /tmp: a tmpfs of its own sandbox, covered in each session's mount namespace.
constexpr const char* kSessionScratch = "/tmp";
constexpr const char* kZygoteWorkspaces = "/workspace/";

int Fail(const char* name, int err, char* step, size_t step_size) {
  if (step != nullptr && step_size > 0) {
    std::strncpy(step, name, step_size - 1);
    step[step_size - 1] = '\0';
  }
  return err != 0 ? err : EIO;
}

int Fail(ChildStep failed, int err, char* step, size_t step_size) {
  return Fail(ChildStepName(failed), err, step, step_size);
}

int EnterSession(const char* name, int workspace_fd, uint64_t rootfs_size, uint64_t tmp_size, char* step,
                 size_t step_size) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
    return Fail("die with the zygote (PR_SET_PDEATHSIG)", errno, step, step_size);
  // One directory directly under the zygote's /workspace.
  if (name == nullptr || !IsAsciiAlnumDashName(name, 64))
    return Fail("workspace name (one directory of [A-Za-z0-9-], at most 64)", EINVAL, step, step_size);
  // The image as the zygote sees it, before this session's mount namespace exists: the one
  // re-opened in it must be the same directory.
  const int image_fd = ::open(kZygoteImageDir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (image_fd < 0) return Fail(ChildStep::kOpenSources, errno, step, step_size);
  if (::unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) != 0) {
    const int err = errno;
    ::close(image_fd);
    return Fail("unshare the mount, net, ipc and uts namespaces", err, step, step_size);
  }
  Limits limits;
  limits.rootfs_size_bytes = rootfs_size;
  limits.tmp_size_bytes = tmp_size;
  MountPlan plan = PrepareMountsInParent(kZygoteImageDir, image_fd, std::string(kZygoteWorkspaces) + name,
                                         workspace_fd, limits);
  MoveScratchTo(kSessionScratch, &plan);
  ChildStep failed = ChildStep::kOpenSources;
  MountSources sources;
  int err = OpenMountSourcesInChild(plan, &sources, &failed);
  bool root_moved = false;  // the zygote itself would have been refused pivot_root too
  if (err == 0) err = ApplyMountsInChild(plan, sources, &failed, &root_moved);
  for (int fd : {image_fd, sources.image_fd, sources.workspace_fd}) {
    if (fd >= 0) ::close(fd);
  }
  if (err != 0) return Fail(failed, err, step, step_size);
  if (::sethostname("sandbox", 7) != 0) return Fail(ChildStep::kHostname, errno, step, step_size);
  if (int lo = BringUpLoopbackInChild()) return Fail(ChildStep::kLoopback, lo, step, step_size);
  return 0;
}

// stdin, stdout and stderr on /dev/null; nothing else open but `channel`.
int KeepOnlyChannel(int channel) {
  if (channel <= 2) return EBADF;
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) return errno;
  for (int fd = 0; fd <= 2; ++fd) {
    if (fd != null && ::dup2(null, fd) < 0) return errno;
  }
  if (null > 2) ::close(null);
  const int keep[] = {0, 1, 2, channel};
  return CloseAllFdsExcept(keep, 4);
}

int LockDownSession(int channel, const unsigned long long* rlimits, size_t pairs, int last_cap,
                    const void* seccomp, size_t seccomp_bytes, char* step, size_t step_size) {
  if (::unshare(CLONE_NEWCGROUP) != 0) return Fail(ChildStep::kCgroupNamespace, errno, step, step_size);
  RlimitPlan limits;
  if (pairs > limits.entries.size() || (pairs > 0 && rlimits == nullptr))
    return Fail(ChildStep::kRlimits, EINVAL, step, step_size);
  for (size_t i = 0; i < pairs; ++i) {
    limits.entries[i] = {static_cast<int>(rlimits[2 * i]), static_cast<rlim_t>(rlimits[2 * i + 1])};
  }
  limits.count = pairs;
  if (int err = ApplyRlimitsInChild(limits)) return Fail(ChildStep::kRlimits, err, step, step_size);
  if (::chdir("/workspace") != 0) return Fail(ChildStep::kChdirWorkspace, errno, step, step_size);
  ChildStep failed = ChildStep::kDropCapabilities;
  // Root mode (a zygote needs it): the namespace's root may and must shed its groups.
  if (int err = DropPrivilegesInChild(CapabilityPlan{last_cap}, true, &failed)) return Fail(failed, err, step, step_size);
  if (int err = KeepOnlyChannel(channel)) return Fail(ChildStep::kCloseFds, err, step, step_size);
  SeccompProgram program;
  if (seccomp == nullptr || seccomp_bytes == 0 || seccomp_bytes % sizeof(sock_filter) != 0)
    return Fail(ChildStep::kSeccomp, EINVAL, step, step_size);
  program.instructions.resize(seccomp_bytes / sizeof(sock_filter));
  std::memcpy(program.instructions.data(), seccomp, seccomp_bytes);
  if (int err = InstallSeccompInChild(program)) return Fail(ChildStep::kSeccomp, err, step, step_size);
  return 0;
}

}  // namespace
}  // namespace sbx

// No exception may cross into Python: an allocation failure is a failed step like any other.
extern "C" int sbx_session_enter(const char* workspace_name, int workspace_fd, unsigned long long rootfs_size_bytes,
                                 unsigned long long tmp_size_bytes, char* step, size_t step_size) {
  try {
    return sbx::EnterSession(workspace_name, workspace_fd, rootfs_size_bytes, tmp_size_bytes, step, step_size);
  } catch (...) {
    return sbx::Fail("prepare the session's mounts", ENOMEM, step, step_size);
  }
}

extern "C" int sbx_session_lock_down(int channel, const unsigned long long* rlimits, size_t rlimit_pairs,
                                     int last_cap, const void* seccomp_program, size_t seccomp_bytes, char* step,
                                     size_t step_size) {
  try {
    return sbx::LockDownSession(channel, rlimits, rlimit_pairs, last_cap, seccomp_program, seccomp_bytes, step,
                                step_size);
  } catch (...) {
    return sbx::Fail("prepare the seccomp program", ENOMEM, step, step_size);
  }
}

extern "C" void sbx_prefault(const unsigned long long* ranges, size_t range_count) {
  for (size_t i = 0; ranges != nullptr && i < range_count; ++i) {
    // The copies a first execution's writes would make; failure only leaves them to it.
    (void)::madvise(reinterpret_cast<void*>(ranges[2 * i]), ranges[2 * i + 1], MADV_POPULATE_WRITE);
  }
}

extern "C" int sbx_zygote_fork(const unsigned long long* ranges, size_t range_count) {
  const pid_t pid = ::fork();
  if (pid < 0) return -errno;
  if (pid == 0) sbx_prefault(ranges, range_count);
  return pid;
}

extern "C" int sbx_zygote_unshare_pid(void) { return ::unshare(CLONE_NEWPID) == 0 ? 0 : errno; }

extern "C" int sbx_zygote_setns_pid(int pid_namespace_fd) {
  return ::setns(pid_namespace_fd, CLONE_NEWPID) == 0 ? 0 : errno;
}

extern "C" int sbx_private_tmpfs(const char* dir, const char* tmpfs_options) {
  if (::unshare(CLONE_NEWNS) != 0) return errno;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (::mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, tmpfs_options) != 0) return errno;
  return 0;
}
