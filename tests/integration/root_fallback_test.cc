// Where the kernel refuses pivot_root (a container runtime's seccomp profile, an initramfs root)
// the sandbox enters its root by moving it over "/" and chroot, and is as closed as before:
// the host's files are out of reach, the payload cannot chroot its way out, and the result says
// which way the root was entered.
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#endif

// Runs `sbx args...` with pivot_root denied (EPERM) by a seccomp filter on sbx itself, as a
// container's profile would; everything else of the kernel stays as it is.
HostRun SbxWithoutPivotRoot(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SBX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunOnHost(argv, [] {
    static sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pivot_root, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0;
  });
}

// Prints whether the host's marker file is visible, whether the image's root is "/", and what
// an attempt to chroot out (the classic escape from a chroot: a deeper chroot, then "..")
// gives.
constexpr char kProbe[] = R"(
import os, sys
marker = sys.argv[1]
print("marker", os.path.exists(marker))
print("image", os.path.exists("/usr/lib/sbx/session_driver.py"))
try:
    os.makedirs("/tmp/deeper", exist_ok=True)
    os.chroot("/tmp/deeper")
    for _ in range(64):
        os.chdir("..")
    os.chroot(".")
    print("escape", os.path.exists(marker))
except OSError as e:
    print("escape", e.errno)
)";

TEST(RootFallback, WithoutPivotRootTheRootIsMovedAndStillClosed) {
  char marker[] = "/var/tmp/sbx-root-marker-XXXXXX";
  const int marker_fd = ::mkstemp(marker);
  ASSERT_GE(marker_fd, 0);
  ::close(marker_fd);
  const std::string argv_tail = std::string(marker);

  // The control: on the host the marker is there (and the escape's chroot needs no pivot).
  HostRun host = RunOnHost({"/usr/bin/python3", "-c", kProbe, argv_tail});
  EXPECT_NE(host.output.find("marker True"), std::string::npos) << host.output;

  HostRun pivoted = RunOnHost({SBX_BINARY, "run", "--json", "--", "python3", "-c", kProbe, argv_tail});
  HostRun moved = SbxWithoutPivotRoot({"run", "--json", "--", "python3", "-c", kProbe, argv_tail});
  ::unlink(marker);
  for (const HostRun* run : {&pivoted, &moved}) {
    ASSERT_EQ(run->exit_code, 0) << run->output;
    const auto result = nlohmann::json::parse(run->output);
    const std::string out = result.value("stdout", "");
    EXPECT_NE(out.find("marker False"), std::string::npos) << out;
    EXPECT_NE(out.find("image True"), std::string::npos) << out;
    EXPECT_NE(out.find("escape " + std::to_string(EPERM)), std::string::npos) << out;
  }
  EXPECT_EQ(nlohmann::json::parse(pivoted.output)["enforcement"]["root"], "pivot_root") << pivoted.output;
  EXPECT_EQ(nlohmann::json::parse(moved.output)["enforcement"]["root"], "move_chroot") << moved.output;
}

}  // namespace
}  // namespace sbx::testing
