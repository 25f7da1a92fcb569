// Shared helpers for integration tests: run a command in a real sandbox with the real image.
#pragma once

#include <gtest/gtest.h>

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "sandbox/launcher.h"

namespace sbx::testing {

// The image every integration test uses: $SBX_TEST_IMAGE, else the default image. A missing
// image is a test failure (the README's test command builds it), never a skip.
std::string TestImage();

// Runs argv under `policy` (default policy when omitted); fails the test on an sbx error.
// Under isolation "outer" there is no image to find.
RunResult RunInSandbox(const std::vector<std::string>& argv, const Policy& policy = Policy{},
                       const std::string& workspace = "");

struct HostRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs argv directly on the host, unsandboxed: the differential control of every probe.
// `prepare`, if set, runs in the child before the exec (a uid switch, a seccomp filter); it
// returns false to fail the run with exit code 99.
HostRun RunOnHost(const std::vector<std::string>& argv, const std::function<bool()>& prepare = {});
// A `prepare` for RunOnHost: a seccomp filter that refuses system call `nr` with EPERM from
// then on, as a container runtime's profile would, and allows everything else.
std::function<bool()> DenySyscall(long nr);

// What /proc/self/personality says on the host (cat, the control) and in a sandbox (`run`
// starts it with the argv given) while this process runs with ADDR_NO_RANDOMIZE and UNAME26
// added, as under `setarch -R --uname-2.6`. The process's own is restored before it returns.
struct PersonalitySeen {
  std::string host;
  RunResult inside;
};
PersonalitySeen PersonalityUnderSetarch(const std::function<RunResult(const std::vector<std::string>&)>& run);

// A host file's whole content; "" when it cannot be read.
std::string ReadHostFile(const std::string& path);

// What enforced `what` in the result ("memory": "cgroup_v1", ...), "" when it does not say.
std::string MechanismOf(const RunResult& result, const std::string& what);

// Path of a static probe binary built by tests/CMakeLists.txt.
std::string ProbePath(const std::string& name);

// Copies a probe into `workspace` so the sandbox can run it as /workspace/<name>.
void StageProbe(const std::string& name, const std::string& workspace);

// A fresh host directory, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Host processes whose command line contains `token` (to prove nothing survived).
std::vector<int> HostProcessesWith(const std::string& token);

// Host processes named `comm` (as in /proc/<pid>/comm) that descend from `ancestor` by their
// parent chain, whatever their command lines say.
std::vector<int> DescendantsNamed(pid_t ancestor, const std::string& comm);

// Entries of `dir` whose names start with `prefix`, as full paths.
std::vector<std::string> EntriesWithPrefix(const std::string& dir, const std::string& prefix);
// Cgroups named after runner `pid` (sbx-<pid>-*) in every hierarchy this process belongs to.
std::vector<std::string> CgroupsOf(pid_t pid);
// Lines of /proc/self/mountinfo.
size_t HostMountCount();

// True inside tools/vm's cgroup v2 VM (SBX_IN_CGROUP2_VM=1), where v2 must be used.
bool InCgroup2Vm();

// How much longer than on a native host wall-clock bounds may take: 10 in the VM, which
// emulates the CPU with TCG (10-20 times slower), else 1. Scale slack, never the limit
// under test.
double WallClockScale();

}  // namespace sbx::testing
