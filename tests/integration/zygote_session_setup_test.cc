// The pooled sessions' library (sandbox/session_setup) as the zygote uses it: its failures reach
// the host as setup errors naming the step, and it loads against the image's glibc.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <string>

#include "base/remove_tree.h"
#include "sandbox/image/image.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/workspace/workspace.h"
#include "sandbox_fixture.h"
#include "src/executor/zygote.h"

namespace sbx::executor {
namespace {

using sbx::testing::TestImage;

// A directory `name` directly under `root`, owned by the sandbox user, opened O_PATH.
Workspace Subdirectory(const Workspace& root, const std::string& name, const IdMapping& owner) {
  EXPECT_EQ(::mkdirat(root.fd.get(), name.c_str(), 0700), 0) << name;
  EXPECT_EQ(::fchownat(root.fd.get(), name.c_str(), owner.host_uid, owner.host_gid, AT_SYMLINK_NOFOLLOW), 0);
  Workspace workspace;
  workspace.path = root.path + "/" + name;
  workspace.fd.reset(::openat(root.fd.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  EXPECT_TRUE(workspace.fd) << workspace.path;
  return workspace;
}

// The host passes the session its workspace's fd and its name; the library re-opens the name in
// the session's mount namespace and refuses a directory that is not the one passed. The control:
// the same zygote spawns a session for the matching pair.
TEST(ZygoteSessionSetup, AWorkspaceThatIsNotTheOnePassedIsRefusedNamingTheStep) {
  auto mapping = ComputeIdMapping(::geteuid(), ::getegid());
  ASSERT_TRUE(mapping) << mapping.error().ToString();
  auto root = CreateTemporaryWorkspace(mapping->host_uid, mapping->host_gid);
  ASSERT_TRUE(root) << root.error().ToString();
  const Workspace a = Subdirectory(*root, "s-a", *mapping);
  const Workspace b = Subdirectory(*root, "s-b", *mapping);
  auto image = ResolveImageDir(TestImage());
  ASSERT_TRUE(image) << image.error().ToString();
  ZygoteOptions options;
  options.image_dir = *image;
  options.warmup_code = "";
  {
    auto zygote = Zygote::Start(options, *root);
    ASSERT_TRUE(zygote) << zygote.error().ToString();
    auto refused = (*zygote)->Spawn(a, "s-b");
    ASSERT_FALSE(refused) << "a session was made with s-a's fd over s-b";
    EXPECT_EQ(refused.error().code, ErrorCode::kSetupFailed);
    EXPECT_NE(refused.error().message.find("pooled session setup: re-open the image and the workspace in the "
                                           "sandbox's mount namespace: Stale file handle"),
              std::string::npos)
        << refused.error().ToString();
    auto made = (*zygote)->Spawn(b, "s-b");
    EXPECT_TRUE(made) << made.error().ToString();
  }
  EXPECT_TRUE(RemoveTree(root->path));
}

// The GLIBC_x.y versions that `objdump -T` of `file` names (what it needs, or what a libc has).
std::set<std::string> GlibcVersions(const std::string& file) {
  std::set<std::string> versions;
  FILE* out = ::popen(("objdump -T '" + file + "'").c_str(), "r");
  if (out == nullptr) return versions;
  std::string text;
  char chunk[4096];
  for (size_t n; (n = ::fread(chunk, 1, sizeof chunk, out)) > 0;) text.append(chunk, n);
  ::pclose(out);
  const std::regex version(R"(GLIBC_[0-9]+(\.[0-9]+)+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), version); it != std::sregex_iterator(); ++it)
    versions.insert(it->str());
  return versions;
}

// The library is built here, against the host's glibc, and runs in the image's: everything it
// asks of glibc must be in the image's libc (a newer glibc's symbol would not load).
TEST(ZygoteSessionSetup, LibraryNeedsOnlyGlibcVersionsTheImageHas) {
  auto image = ResolveImageDir(TestImage());
  ASSERT_TRUE(image) << image.error().ToString();
  const std::set<std::string> needed = GlibcVersions(SBX_SESSION_LIBRARY_BUILD_PATH);
  const std::set<std::string> offered = GlibcVersions(*image + "/usr/lib/x86_64-linux-gnu/libc.so.6");
  // The control: both lists were read (every x86-64 glibc starts at 2.2.5).
  ASSERT_TRUE(needed.count("GLIBC_2.2.5")) << "objdump -T found no glibc version in the library";
  ASSERT_TRUE(offered.count("GLIBC_2.2.5")) << "objdump -T found no glibc version in the image's libc";
  for (const std::string& version : needed) EXPECT_TRUE(offered.count(version)) << version << " is not in the image";
}

// The zygote forks through the library (zygote_prefault.Fork), which copies the pages it is given
// in the child before any Python runs there. Python forks with 16 pages of its own written: the
// child finds the 8 it passed already its own, while the other 8 (the control) are still shared.
TEST(ZygoteSessionSetup, TheLibraryForkCopiesTheGivenPagesBeforeTheChildRuns) {
  const std::string script = R"py(
import ctypes, mmap, os, sys
sys.path.insert(0, sys.argv[1])
import zygote_prefault as zp
pages = 16
buffer = mmap.mmap(-1, pages * zp.PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
buffer.write(b"x" * len(buffer))
low = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
report_r, report_w = os.pipe()
pid = zp.Fork(sys.argv[2])(zp.pack([(low, 8 * zp.PAGE)]))
if pid == 0:
    own, shared = zp._present_pages([(low, low + pages * zp.PAGE)])
    first = low // zp.PAGE
    given = sum(1 for page in own if page < first + 8)
    os.write(report_w, b"%d %d %d" % (given, len(own) - given, len(shared)))
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(report_r, 100).decode())
)py";
  const std::string command = "python3 -c '" + script + "' '" + std::string(SBX_SOURCE_TREE) + "/rootfs' '" +
                              SBX_SESSION_LIBRARY_BUILD_PATH + "'";
  FILE* out = ::popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  char line[128] = {};
  const bool read = ::fgets(line, sizeof line, out) != nullptr;
  EXPECT_EQ(::pclose(out), 0);
  ASSERT_TRUE(read) << "the script printed nothing";
  EXPECT_EQ(std::string(line), "8 0 8\n") << "copied of the given, copied of the others, still shared";
}

}  // namespace
}  // namespace sbx::executor
