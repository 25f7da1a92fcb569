// Files in and out of a real sandbox: a staged script leaves hostile outputs; only safe files
// return.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "sandbox/isolation/userns.h"
#include "sandbox/workspace/copy_out.h"
#include "sandbox/workspace/manifest.h"
#include "sandbox/workspace/workspace.h"
#include "sandbox/workspace/workspace_archive.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

// Run by the image's python3 as /workspace/main.py (staged through a manifest, never argv).
constexpr const char* kHostileOutputs = R"PY(
import os
out = '/workspace/output'
os.makedirs(out + '/nested', exist_ok=True)
open(out + '/result.txt', 'w').write('42\n')
open(out + '/plot.png', 'wb').write(b'\x89PNG not really')
open(out + '/nested/deep.txt', 'w').write('deep\n')
open(out + '/run.sh', 'w').write('#!/bin/sh\n')
steps = {
    'chmod_setuid': lambda: os.chmod(out + '/run.sh', 0o4755),
    'symlink_shadow': lambda: os.symlink('/etc/shadow', out + '/shadow'),
    'symlink_dir': lambda: os.symlink('/etc', out + '/etc'),
    'symlink_relative': lambda: os.symlink('../../../../../etc/passwd', out + '/nested/passwd'),
    'fifo': lambda: os.mkfifo(out + '/fifo'),
    'sparse': lambda: os.truncate(open(out + '/sparse', 'wb').name, 1 << 40),
    'newline_name': lambda: open(out + '/bad\nname', 'w').write('x'),
}
for name, step in steps.items():
    try:
        step()
        print(name, 'ok')
    except OSError as e:
        print(name, 'failed', e)
)PY";

FileOwner SandboxOwner() {
  if (::geteuid() == 0) return FileOwner{kRootModeHostId, kRootModeHostId};
  return FileOwner{::geteuid(), ::getegid()};
}

mode_t LstatMode(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

// Every path below `dir`, relative, found without following symlinks.
void ListTree(const std::string& dir, const std::string& prefix, std::set<std::string>* found) {
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return;
  while (struct dirent* entry = ::readdir(handle)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    found->insert(prefix + name);
    if (S_ISDIR(LstatMode(dir + "/" + name)))
      ListTree(dir + "/" + name, prefix + name + "/", found);
  }
  ::closedir(handle);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(Files, OnlySafeRegularFilesComeBackFromARealRun) {
  ScratchDir workspace, dest;
  Manifest manifest;
  manifest.AddBytes("main.py", kHostileOutputs).AddDirectory("output");
  auto staged = StageManifest(workspace.path(), manifest, SandboxOwner());
  ASSERT_TRUE(staged) << staged.error().ToString();

  Policy policy;
  policy.limits.file_size_bytes = 1ull << 40;  // the sparse file must really be made
  RunResult run =
      RunInSandbox({"/usr/bin/python3", "/workspace/main.py"}, policy, workspace.path());
  ASSERT_EQ(run.status, RunStatus::kExited) << run.stderr_data;
  ASSERT_EQ(run.exit_code, 0) << run.stderr_data;
  // The hostile fixtures exist on the host (otherwise the test would pass vacuously).
  for (const char* step :
       {"symlink_shadow", "symlink_dir", "symlink_relative", "fifo", "sparse", "newline_name"}) {
    EXPECT_NE(run.stdout_data.find(std::string(step) + " ok"), std::string::npos)
        << run.stdout_data;
  }
  const std::string out = workspace.path() + "/output";
  EXPECT_TRUE(S_ISLNK(LstatMode(out + "/shadow")));
  EXPECT_TRUE(S_ISFIFO(LstatMode(out + "/fifo")));
  struct stat sparse {};
  ASSERT_EQ(::lstat((out + "/sparse").c_str(), &sparse), 0);
  EXPECT_EQ(sparse.st_size, off_t{1} << 40);

  // Every sandboxed process is dead once RunSandboxed has returned.
  ::alarm(60);  // a FIFO opened for reading would hang: fail loudly instead
  auto copied = CopyOut(workspace.path(),
                        {"output", "output/etc/passwd", "output/*.png", "main.py"}, dest.path());
  ::alarm(0);
  ASSERT_TRUE(copied) << copied.error().ToString();
  std::set<std::string> found;
  ListTree(dest.path(), "", &found);
  EXPECT_EQ(found,
            (std::set<std::string>{"main.py", "output", "output/nested", "output/nested/deep.txt",
                                   "output/plot.png", "output/result.txt", "output/run.sh"}));
  EXPECT_EQ(ReadAll(dest.path() + "/output/result.txt"), "42\n");
  EXPECT_EQ(LstatMode(dest.path() + "/output/run.sh") & 07777, 0755u);  // setuid dropped
  EXPECT_EQ(LstatMode(dest.path() + "/output/result.txt") & 07777, 0644u);
  std::map<std::string, CopiedEntry> by_path;
  for (const auto& entry : copied->entries) by_path[entry.path] = entry;
  EXPECT_EQ(by_path["output/sparse"].status, CopyStatus::kOverBudget);
  EXPECT_EQ(by_path["output/sparse"].size, uint64_t{1} << 40);
  for (const char* link :
       {"output/shadow", "output/etc", "output/nested/passwd", "output/etc/passwd"})
    EXPECT_EQ(by_path[link].status, CopyStatus::kSkippedSymlink) << link;
  EXPECT_EQ(by_path["output/fifo"].status, CopyStatus::kSkippedSpecial);
  EXPECT_EQ(by_path["output/bad\nname"].status, CopyStatus::kSkippedBadName);
  EXPECT_EQ(by_path["output/plot.png"].status, CopyStatus::kCopied);
}

TEST(Files, WorkspacePersistedAfterARunRestoresWithoutTheHostileEntries) {
  ScratchDir workspace, restored, archive_dir;
  Manifest manifest;
  manifest.AddBytes("main.py", kHostileOutputs);
  ASSERT_TRUE(StageManifest(workspace.path(), manifest, SandboxOwner()));
  RunResult run =
      RunInSandbox({"/usr/bin/python3", "/workspace/main.py"}, Policy{}, workspace.path());
  ASSERT_EQ(run.exit_code, 0) << run.stderr_data;
  // Under the default 1 GiB file-size limit the sparse file stays small; the rest is hostile.
  const std::string archive = archive_dir.path() + "/ws.tar";
  auto persisted = PersistWorkspaceTar(workspace.path(), archive);
  ASSERT_TRUE(persisted) << persisted.error().ToString();
  auto back = RestoreWorkspaceTar(archive, restored.path(), SandboxOwner());
  ASSERT_TRUE(back) << back.error().ToString();
  std::set<std::string> found;
  ListTree(restored.path(), "", &found);
  EXPECT_EQ(found, (std::set<std::string>{"main.py", "output", "output/nested",
                                          "output/nested/deep.txt", "output/plot.png",
                                          "output/result.txt", "output/run.sh", "output/sparse"}));
  EXPECT_EQ(LstatMode(restored.path() + "/output/run.sh") & 07777, 0755u);
  // The restored workspace runs again in a sandbox, as the sandbox user.
  RunResult again = RunInSandbox(
      {"/usr/bin/python3", "-c", "print(open('/workspace/output/result.txt').read(), end='')"},
      Policy{}, restored.path());
  EXPECT_EQ(again.stdout_data, "42\n") << again.stderr_data;
}

}  // namespace
}  // namespace sbx::testing
