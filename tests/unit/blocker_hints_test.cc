// Tests for the container blocker hints and the fresh-/proc probe on the real kernel: a /proc
// masked the way runtimes mask it (in a private mount namespace) makes the probe fail and name
// the masked paths; the same probe without the mask works (the control).
#include "sandbox/host/blocker_hints.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sandbox/fs/mounts.h"
#include "sandbox/host/host_probe.h"

namespace sbx {
namespace {

// podman 4.3's default container, and a host with binfmt_misc (which never blocks a procfs).
constexpr const char* kPodmanMountinfo =
    "123 119 0:74 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "57 123 0:74 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
    "61 123 0:79 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n"
    "62 123 0:75 /null /proc/keys rw,nosuid,noexec - tmpfs tmpfs rw,size=65536k,mode=755\n"
    "70 119 0:80 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n";
constexpr const char* kHostMountinfo =
    "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "40 22 0:36 / /proc/sys/fs/binfmt_misc rw,relatime shared:20 - autofs systemd-1 rw\n"
    "41 1 0:37 / /processing rw - tmpfs tmpfs rw\n";

TEST(ProcOvermounts, NamesWhatARuntimeMountsOverProc) {
  EXPECT_EQ(ProcOvermounts(kPodmanMountinfo),
            (std::vector<std::string>{"/proc/bus", "/proc/acpi", "/proc/keys"}));
}

TEST(ProcOvermounts, IgnoresBinfmtMiscAndLookalikes) {
  EXPECT_TRUE(ProcOvermounts(kHostMountinfo).empty());
  EXPECT_TRUE(ProcOvermounts("").empty());
  EXPECT_TRUE(ProcOvermounts("garbage\n1 2\n").empty());
}

TEST(BlockerHints, NamespaceDenialNamesTheSeccompFixForEachRuntime) {
  const std::string hint = NamespaceDeniedHint(EPERM);
  EXPECT_NE(hint.find("seccomp=deploy/seccomp/sbx.json"), std::string::npos) << hint;
  EXPECT_NE(hint.find("seccompProfile"), std::string::npos) << hint;
  EXPECT_NE(NamespaceDeniedHint(ENOSPC).find("max_user_namespaces"), std::string::npos);
  EXPECT_EQ(NamespaceDeniedHint(ENOMEM), "");
}

TEST(BlockerHints, HostnameAndMountStepsGetTheirBlocker) {
  EXPECT_NE(SetupFailureHint(ChildStep::kHostname, EPERM).find("CAP_SYS_ADMIN"), std::string::npos);
  EXPECT_NE(SetupFailureHint(ChildStep::kMountOverlay, EACCES).find("AppArmor"), std::string::npos);
  EXPECT_EQ(SetupFailureHint(ChildStep::kMountScratch, ENOENT), "");
  EXPECT_EQ(SetupFailureHint(ChildStep::kExec, EPERM), "");
}

// Runs `body` in a forked child with a private mount namespace; returns its exit code.
int InPrivateMountNamespace(int (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      ::_exit(90);
    ::_exit(body());
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST(FreshProcProbe, FailsUnderAMaskedProcAndNamesTheFix) {
  if (::geteuid() != 0 || !CanCreateUserNamespace())
    GTEST_SKIP() << "needs root (to mask /proc in a private mount namespace) and user namespaces";
  // The control: this host's own /proc allows a fresh one.
  ASSERT_EQ(InPrivateMountNamespace([] { return ProbeFreshProc().failed_step; }), 0);
  const int masked = InPrivateMountNamespace([] {
    if (::mount("/dev/null", "/proc/keys", nullptr, MS_BIND, nullptr) != 0) return 91;
    const ProbeStep step = ProbeFreshProc();
    if (step.failed_step == 0 || step.err != EPERM) return 92;
    const std::string hint = ProbeStepHint(step);
    for (const char* needed : {"/proc/keys", "unmask=/proc/*", "systempaths=unconfined",
                               "procMount: Unmasked", "hostUsers: false"}) {
      if (hint.find(needed) == std::string::npos) return 93;
    }
    return 0;
  });
  EXPECT_EQ(masked, 0) << "91: cannot mask, 92: probe passed, 93: hint lacks a fix";
}

// In a child: a filter that makes `syscall` fail with EPERM, as a container's profile does.
bool DenyWithEperm(int syscall) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  bool ok = ctx != nullptr && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), syscall, 0) == 0 &&
            seccomp_load(ctx) == 0;
  seccomp_release(ctx);
  return ok;
}

TEST(ProbeHints, SeccompDenialsNameTheStepAndTheProfileFix) {
  if (!CanCreateUserNamespace()) GTEST_SKIP() << "this kernel does not allow user namespaces";
  // The controls: both probes work here without a filter.
  ASSERT_EQ(ProbeHostnameInUtsNamespace().failed_step, 0);
  ASSERT_EQ(ProbeOverlayInUserNamespace(ScratchDirectoryForProbes()).failed_step, 0);
  const int denied = InPrivateMountNamespace([] {
    if (!DenyWithEperm(SCMP_SYS(sethostname))) return 91;
    const ProbeStep hostname = ProbeHostnameInUtsNamespace();
    const std::string why = DescribeProbeStep(hostname) + ": " + ProbeStepHint(hostname);
    if (why.find("sethostname") != 0 || why.find("CAP_SYS_ADMIN") == std::string::npos ||
        why.find("seccomp=deploy/seccomp/sbx.json") == std::string::npos)
      return 92;
    if (!DenyWithEperm(SCMP_SYS(unshare))) return 91;
    const ProbeStep overlay = ProbeOverlayInUserNamespace(ScratchDirectoryForProbes());
    const std::string userns = DescribeProbeStep(overlay) + ": " + ProbeStepHint(overlay);
    if (userns.find("unshare(CLONE_NEWUSER|CLONE_NEWNS): Operation not permitted") != 0 ||
        userns.find("seccompProfile") == std::string::npos)
      return 93;
    return 0;
  });
  EXPECT_EQ(denied, 0) << "91: no filter, 92: hostname hint, 93: namespace hint";
}

TEST(MountPlan, ScratchCoversTheImageParentNotTheHostsTmp) {
  const MountPlan plan = PrepareMountsInParent("/var/cache/sbx/images/abc", -1, "", -1, Limits{});
  EXPECT_EQ(plan.scratch_dir, "/var/cache/sbx/images");
  EXPECT_EQ(plan.overlay_options.find("/tmp"), std::string::npos) << plan.overlay_options;
  EXPECT_NE(plan.overlay_options.find("upperdir=/var/cache/sbx/images/upper"), std::string::npos);
}

// The run's extra files are planned with the mounts, not patched in afterwards.
TEST(MountPlan, CarriesTheRootExtrasItWasGiven) {
  const MountPlan plain = PrepareMountsInParent("/var/cache/sbx/images/abc", -1, "", -1, Limits{});
  EXPECT_TRUE(plain.extras.resolv_conf.empty());
  EXPECT_TRUE(plain.extras.ca_bundle.empty());
  EXPECT_TRUE(plain.extras.expose_image_at.empty());
  RootExtras extras;
  extras.expose_image_at = "/.image";
  extras.expose_library_at = "/.library.so";
  extras.resolv_conf = "nameserver 127.0.0.1\n";
  extras.ca_bundle = "BUNDLE";
  const MountPlan plan = PrepareMountsInParent("/var/cache/sbx/images/abc", -1, "", -1, Limits{}, extras);
  EXPECT_EQ(plan.extras.expose_image_at, "/.image");
  EXPECT_EQ(plan.extras.expose_library_at, "/.library.so");
  EXPECT_EQ(plan.extras.resolv_conf, "nameserver 127.0.0.1\n");
  EXPECT_EQ(plan.extras.ca_bundle, "BUNDLE");
}

}  // namespace
}  // namespace sbx
