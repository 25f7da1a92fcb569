// Builds the sandbox's mount tree inside its mount namespace; the child side allocates nothing.
#include "sandbox/fs/mounts.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

#include "base/str_cat.h"
#include "sandbox/isolation/userns.h"

namespace sbx {
namespace {

constexpr unsigned long kSafe = MS_NOSUID | MS_NODEV;

// /proc entries that leak host state or reach the kernel (runc's and bubblewrap's lists).
constexpr const char* kMaskedProcFiles[] = {
    "proc/kcore",       "proc/keys",        "proc/key-users",  "proc/timer_list",
    "proc/sysrq-trigger", "proc/latency_stats", "proc/sched_debug", "proc/kallsyms",
    "proc/kpagecount",  "proc/kpageflags",  "proc/kpagecgroup", "proc/config.gz",
    "proc/vmallocinfo", "proc/slabinfo",    "proc/pagetypeinfo", "proc/buddyinfo",
};
constexpr const char* kReadOnlyProcDirs[] = {"proc/sys", "proc/bus", "proc/fs", "proc/irq"};
// Hidden entirely under an empty read-only tmpfs, as runc does.
constexpr const char* kMaskedProcDirs[] = {"proc/acpi", "proc/asound", "proc/scsi",
                                           "proc/tty/driver"};
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

// Mount flags that a bind remount inside a user namespace must keep (the kernel locks the
// atime and restriction flags the mount had when the namespace was created).
unsigned long LockedFlags(const char* path) {
  struct statvfs st {};
  if (::statvfs(path, &st) != 0) return 0;
  unsigned long flags = 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  if (st.f_flag & ST_RDONLY) flags |= MS_RDONLY;
  return flags;
}

int BindRemount(const char* path, unsigned long extra) {
  unsigned long flags = MS_BIND | MS_REMOUNT | LockedFlags(path) | extra;
  return ::mount(nullptr, path, nullptr, flags, nullptr) == 0 ? 0 : errno;
}

int Fail(ChildStep step, ChildStep* failed_step) {
  *failed_step = step;
  return errno != 0 ? errno : EIO;
}

// Creates an empty regular file (a bind target) if it is missing.
int Touch(const char* path) {
  int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

// Writes `contents` into the scratch (the current directory) as `scratch_name` and binds it
// read-only over `target` (relative to the scratch: "root/etc/resolv.conf"). The target must be
// a regular file in the image: a symlink would be followed in the host's tree, which is still
// this process's root here.
int BindGeneratedFile(const std::string& contents, const char* scratch_name, const char* target) {
  struct stat existing {};
  if (::lstat(target, &existing) != 0) return errno;
  if (!S_ISREG(existing.st_mode)) return ELOOP;
  int fd = ::open(scratch_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return errno;
  size_t done = 0;
  int err = 0;
  while (done < contents.size() && err == 0) {
    ssize_t written = ::write(fd, contents.data() + done, contents.size() - done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) err = written < 0 ? errno : EIO;
    else done += static_cast<size_t>(written);
  }
  ::close(fd);
  if (err != 0) return err;
  if (::mount(scratch_name, target, nullptr, MS_BIND, nullptr) != 0) return errno;
  return BindRemount(target, MS_RDONLY | kSafe | MS_NOEXEC);
}

// "/proc/self/fd/<fd>" into `out` without allocating.
void FdPath(int fd, char (&out)[32]) {
  char digits[12];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0 && n < 11);
  const char prefix[] = "/proc/self/fd/";
  size_t pos = 0;
  for (char c : prefix) {
    if (c != '\0') out[pos++] = c;
  }
  while (n > 0) out[pos++] = digits[--n];
  out[pos] = '\0';
}

// Re-opens `path` in this mount namespace with no symlink resolution and checks it is the
// same directory (or, with `directory` false, file) the parent validated. Returns the new fd
// or -errno.
int ReopenSame(const char* path, int parent_fd, bool directory = true) {
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC | (directory ? O_DIRECTORY : 0);
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how)));
  if (fd < 0) return -errno;
  struct stat now {}, validated {};
  if (::fstat(fd, &now) != 0 || ::fstat(parent_fd, &validated) != 0 ||
      now.st_dev != validated.st_dev || now.st_ino != validated.st_ino) {
    ::close(fd);
    return -ESTALE;
  }
  return fd;
}

int BuildDev(const MountPlan& plan) {
  if (::mount("tmpfs", "root/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755") != 0)
    return errno;
  char target[64];
  char source[64];
  for (const char* device : kDevices) {
    // Host devices keep their node semantics, so these binds cannot be nodev.
    ::snprintf(target, sizeof(target), "root/dev/%s", device);
    ::snprintf(source, sizeof(source), "/dev/%s", device);
    if (int err = Touch(target)) return err;
    if (::mount(source, target, nullptr, MS_BIND, nullptr) != 0) return errno;
  }
  if (::mkdir("root/dev/pts", 0755) != 0) return errno;
  if (::mount("devpts", "root/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620") != 0)
    return errno;
  if (::symlink("pts/ptmx", "root/dev/ptmx") != 0) return errno;
  if (::mkdir("root/dev/shm", 01777) != 0) return errno;
  if (::mount("tmpfs", "root/dev/shm", "tmpfs", kSafe, plan.shm_options.c_str()) != 0)
    return errno;
  const char* links[][2] = {{"/proc/self/fd", "root/dev/fd"},
                            {"/proc/self/fd/0", "root/dev/stdin"},
                            {"/proc/self/fd/1", "root/dev/stdout"},
                            {"/proc/self/fd/2", "root/dev/stderr"}};
  for (auto& link : links) {
    if (::symlink(link[0], link[1]) != 0) return errno;
  }
  // The tmpfs belongs to the sandbox user: make it read-only so /dev gains no new entries.
  return BindRemount("root/dev", MS_RDONLY | MS_NOSUID | MS_NOEXEC);
}

// /usr straight from the image, read-only, over the overlay's: nothing under it is writable by
// the sandbox user anyway (the image's files belong to root), so the program sees the same
// files and permissions, but Python's hundreds of lookups there skip overlayfs, and so does the
// eviction of their dentries when the namespace ends.
// An image without a /usr directory keeps the overlay's.
int BindImageUsr() {
  struct stat usr {};
  if (::lstat("lower/usr", &usr) != 0 || !S_ISDIR(usr.st_mode)) return 0;
  if (::mount("lower/usr", "root/usr", nullptr, MS_BIND | MS_REC, nullptr) != 0) return errno;
  return BindRemount("root/usr", MS_RDONLY | kSafe);
}

// The caller's directory, bound read-write; or, for a run that keeps no workspace, a tmpfs:
// bounded like /tmp, and nothing on the host's disk to create, chown and remove per run.
int MountWorkspace(const MountPlan& plan, const MountSources& sources, const char* bind_source) {
  if (sources.workspace_fd < 0) {
    const char* options = plan.workspace_tmpfs_options.c_str();
    return ::mount("tmpfs", "root/workspace", "tmpfs", kSafe, options) == 0 ? 0 : errno;
  }
  if (::mount(bind_source, "root/workspace", nullptr, MS_BIND, nullptr) != 0) return errno;
  return BindRemount("root/workspace", kSafe);
}

// Each entry that exists here is covered; a mount's ENOENT means the entry does not (its
// source, /dev/null, is checked first), so no entry needs an access() of its own.
int MaskProc() {
  struct stat null_device {};
  if (::stat("/dev/null", &null_device) != 0) return errno;
  if (!S_ISCHR(null_device.st_mode)) return ENODEV;
  auto absent = [] { return errno == ENOENT; };
  for (const char* file : kMaskedProcFiles) {
    if (::mount("/dev/null", file, nullptr, MS_BIND, nullptr) != 0 && !absent()) return errno;
  }
  for (const char* dir : kMaskedProcDirs) {
    if (::mount("tmpfs", dir, "tmpfs", MS_RDONLY | kSafe | MS_NOEXEC, "size=4k,mode=0555") != 0 &&
        !absent())
      return errno;
  }
  for (const char* dir : kReadOnlyProcDirs) {
    if (::mount(dir, dir, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      if (absent()) continue;
      return errno;
    }
    if (int err = BindRemount(dir, MS_RDONLY | kSafe | MS_NOEXEC)) return err;
  }
  return 0;
}

}  // namespace

MountPlan PrepareMountsInParent(const std::string& image_path, int image_fd,
                                const std::string& workspace_path, int workspace_fd,
                                const Limits& limits, RootExtras extras) {
  MountPlan plan;
  plan.extras = std::move(extras);
  plan.image_path = image_path;
  plan.workspace_path = workspace_path;
  plan.image_fd = image_fd;
  plan.workspace_fd = workspace_fd;
  plan.scratch_options = StrCat({"size=", Decimal(limits.rootfs_size_bytes), ",mode=0700"});
  MoveScratchTo(image_path.substr(0, image_path.rfind('/')), &plan);
  const Decimal tmp_size(limits.tmp_size_bytes), sandbox_id(kSandboxId);
  plan.tmp_options = StrCat({"size=", tmp_size, ",mode=1777"});
  plan.shm_options = plan.tmp_options;
  plan.workspace_tmpfs_options =
      StrCat({"size=", tmp_size, ",mode=0700,uid=", sandbox_id, ",gid=", sandbox_id});
  return plan;
}

void MoveScratchTo(const std::string& dir, MountPlan* plan) {
  const std::string_view scratch = dir == "/" ? std::string_view() : std::string_view(dir);
  plan->scratch_dir = scratch.empty() ? "/" : scratch;
  plan->overlay_options = StrCat(
      {"lowerdir=", scratch, "/lower,upperdir=", scratch, "/upper,workdir=", scratch, "/work"});
}

int OpenMountSourcesInChild(const MountPlan& plan, MountSources* sources, ChildStep* failed_step) {
  sources->image_fd = ReopenSame(plan.image_path.c_str(), plan.image_fd);
  if (sources->image_fd < 0) {
    errno = -sources->image_fd;
    return Fail(ChildStep::kOpenSources, failed_step);
  }
  if (!plan.extras.library_path.empty()) {
    sources->library_fd = ReopenSame(plan.extras.library_path.c_str(), plan.extras.library_fd, false);
    if (sources->library_fd < 0) {
      errno = -sources->library_fd;
      return Fail(ChildStep::kOpenSources, failed_step);
    }
  }
  if (plan.workspace_fd < 0) return 0;  // a tmpfs workspace: nothing to re-open
  sources->workspace_fd = ReopenSame(plan.workspace_path.c_str(), plan.workspace_fd);
  if (sources->workspace_fd < 0) {
    errno = -sources->workspace_fd;
    return Fail(ChildStep::kOpenSources, failed_step);
  }
  return 0;
}

int ApplyMountsInChild(const MountPlan& plan, const MountSources& sources, ChildStep* failed_step,
                       bool* root_moved) {
  errno = 0;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return Fail(ChildStep::kMountPrivate, failed_step);
  char image_source[32], workspace_source[32];
  FdPath(sources.image_fd, image_source);
  if (sources.workspace_fd >= 0) FdPath(sources.workspace_fd, workspace_source);
  // Covering the image's parent hides nothing the child still needs: the image is bound below
  // from its fd, which names the directory itself, not this path.
  const char* scratch = plan.scratch_dir.c_str();
  if (::mount("tmpfs", scratch, "tmpfs", kSafe | MS_NOEXEC, plan.scratch_options.c_str()) != 0 ||
      ::chdir(scratch) != 0)
    return Fail(ChildStep::kMountScratch, failed_step);
  for (const char* dir : {"lower", "upper", "work", "root"}) {
    if (::mkdir(dir, 0755) != 0) return Fail(ChildStep::kMountScratch, failed_step);
  }
  if (::mount(image_source, "lower", nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return Fail(ChildStep::kMountImage, failed_step);
  // Overlay never writes its lower layer; read-only, nosuid, nodev make that hold regardless.
  if (int err = BindRemount("lower", MS_RDONLY | kSafe)) {
    errno = err;
    return Fail(ChildStep::kMountImage, failed_step);
  }
  if (::mount("overlay", "root", "overlay", kSafe, plan.overlay_options.c_str()) != 0)
    return Fail(ChildStep::kMountOverlay, failed_step);
  if (int err = BindImageUsr()) {
    errno = err;
    return Fail(ChildStep::kMountOverlay, failed_step);
  }
  if (!plan.extras.expose_image_at.empty()) {
    // "root" + the absolute path; mkdir in the overlay only copies up its parent.
    char target[96];
    ::snprintf(target, sizeof(target), "root%s", plan.extras.expose_image_at.c_str());
    if (::mkdir(target, 0755) != 0 || ::mount("lower", target, nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return Fail(ChildStep::kMountImage, failed_step);
    if (int err = BindRemount(target, MS_RDONLY | kSafe)) {
      errno = err;
      return Fail(ChildStep::kMountImage, failed_step);
    }
  }
  if (sources.library_fd >= 0) {
    char target[96], source[32];
    ::snprintf(target, sizeof(target), "root%s", plan.extras.expose_library_at.c_str());
    FdPath(sources.library_fd, source);
    int err = Touch(target);
    if (err == 0 && ::mount(source, target, nullptr, MS_BIND, nullptr) != 0) err = errno;
    if (err == 0) err = BindRemount(target, MS_RDONLY | kSafe);
    if (err != 0) {
      errno = err;
      return Fail(ChildStep::kSessionLibrary, failed_step);
    }
  }
  if (!plan.extras.resolv_conf.empty()) {
    if (int err = BindGeneratedFile(plan.extras.resolv_conf, "resolv.conf", "root/etc/resolv.conf")) {
      errno = err;
      return Fail(ChildStep::kResolvConf, failed_step);
    }
  }
  if (!plan.extras.ca_bundle.empty()) {
    if (int err = BindGeneratedFile(plan.extras.ca_bundle, "ca-certificates.crt",
                                    "root/etc/ssl/certs/ca-certificates.crt")) {
      errno = err;
      return Fail(ChildStep::kCaBundle, failed_step);
    }
  }
  if (int err = MountWorkspace(plan, sources, workspace_source)) {
    errno = err;
    return Fail(ChildStep::kMountWorkspace, failed_step);
  }
  if (::mount("proc", "root/proc", "proc", kSafe | MS_NOEXEC, nullptr) != 0)
    return Fail(ChildStep::kMountProc, failed_step);
  if (::chdir("root") != 0) return Fail(ChildStep::kMountProc, failed_step);
  if (int err = MaskProc()) {
    errno = err;
    return Fail(ChildStep::kMaskProc, failed_step);
  }
  if (::chdir("..") != 0) return Fail(ChildStep::kMaskProc, failed_step);
  if (int err = BuildDev(plan)) {
    errno = err;
    return Fail(ChildStep::kMountDev, failed_step);
  }
  if (::mount("tmpfs", "root/tmp", "tmpfs", kSafe, plan.tmp_options.c_str()) != 0)
    return Fail(ChildStep::kMountTmp, failed_step);
  if (::chdir("root") != 0) return Fail(ChildStep::kPivotRoot, failed_step);
  // pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves no
  // path back to the host's tree (runc's approach, no temporary directory needed).
  if (::syscall(SYS_pivot_root, ".", ".") == 0) {
    if (::umount2(".", MNT_DETACH) != 0 || ::chdir("/") != 0) return Fail(ChildStep::kPivotRoot, failed_step);
    return 0;
  }
  const int refused = errno;
  if (refused != EINVAL && refused != EPERM && refused != ENOSYS) return Fail(ChildStep::kPivotRoot, failed_step);
  if (::mount(".", "/", nullptr, MS_MOVE, nullptr) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0) {
    errno = refused;  // the call the fallback stands in for, which names the fix
    return Fail(ChildStep::kPivotRoot, failed_step);
  }
  *root_moved = true;
  return 0;
}

}  // namespace sbx
