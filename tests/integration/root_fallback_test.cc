// Where the kernel refuses pivot_root (a container runtime's seccomp profile, an initramfs root)
// the sandbox enters its root by moving it over "/" and chroot, and is as closed as before:
// the host's files are out of reach, the payload cannot chroot its way out, and the result says
// which way the root was entered.
#include <fcntl.h>
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

// Runs `sbx args...` with pivot_root denied (EPERM) by a seccomp filter on sbx itself, as a
// container's profile would; everything else of the kernel stays as it is.
HostRun SbxWithoutPivotRoot(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SBX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunOnHost(argv, DenySyscall(SYS_pivot_root));
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
