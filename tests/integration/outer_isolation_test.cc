// Isolation "outer": no namespaces of sbx's own, the rest of a run's guarantees kept. The checks
// prove both halves: the program shares the host's namespaces (so the policy says what happens),
// and it still runs as uid 1000 without capabilities, under seccomp and rlimits, in a tree that
// ends with the run.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

#include "base/remove_tree.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/workspace/workspace.h"
#include "src/executor/executors.h"
#include "src/executor/session_pool.h"
#include "tests/integration/sandbox_fixture.h"
#include "tests/integration/test_policy.h"

namespace sbx::testing {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Policy OuterPolicy() {
  Policy policy;
  policy.isolation = Isolation::kOuter;
  policy.network = NetworkMode::kHost;
  return policy;
}

// A host directory the program (uid 1000) may write, removed with the test.
class OuterWorkspace {
 public:
  OuterWorkspace() { EXPECT_EQ(::chown(dir_.path().c_str(), kSandboxId, kSandboxId), 0); }
  const std::string& path() const { return dir_.path(); }
  std::string Read(const std::string& name) const { return ReadHostFile(dir_.path() + "/" + name); }

 private:
  ScratchDir dir_;
};

RunResult RunOuter(const std::vector<std::string>& argv, const Policy& policy = OuterPolicy(),
                   const std::string& workspace = "") {
  return RunInSandbox(argv, policy, workspace);
}

// True when `pid` is a live process named `comm` (a reused pid would have another name).
bool AliveAs(const std::string& pid, const std::string& comm) {
  return !pid.empty() && ReadHostFile("/proc/" + pid + "/comm") == comm + "\n";
}

// Kills a process the product failed to kill (bounded anyway: a sleep 30), through a pidfd.
void KillIfAlive(const std::string& pid, const std::string& comm) {
  if (!AliveAs(pid, comm)) return;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, std::stoi(pid), 0));
  if (pidfd < 0) return;
  if (AliveAs(pid, comm)) ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
  ::close(pidfd);
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

TEST(OuterIsolation, PassesOutputAndExitCodeAndSaysWhatIsolated) {
  RunResult result = RunOuter({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 7"});
  EXPECT_EQ(result.status, RunStatus::kExited);
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_EQ(result.stdout_data, "hello\n");
  EXPECT_EQ(result.stderr_data, "oops\n");
  EXPECT_EQ(MechanismOf(result, "isolation"), "outer_runtime");
  EXPECT_EQ(MechanismOf(result, "pid_namespace"), "none");
  EXPECT_EQ(MechanismOf(result, "network"), "outer_runtime");
  EXPECT_EQ(MechanismOf(result, "seccomp"), "seccomp_bpf");
  EXPECT_TRUE(result.degraded.empty());
}

TEST(OuterIsolation, RunsAsUid1000WithoutCapabilitiesUnderNoNewPrivs) {
  // The control: this test process is root with capabilities.
  const std::string host = ReadHostFile("/proc/self/status");
  ASSERT_TRUE(Contains(host, "Uid:\t0\t")) << host;
  ASSERT_FALSE(Contains(host, "CapEff:\t0000000000000000")) << host;
  RunResult result = RunOuter({"/bin/cat", "/proc/self/status"});
  ASSERT_EQ(result.status, RunStatus::kExited) << result.stderr_data;
  const std::string& status = result.stdout_data;
  EXPECT_TRUE(Contains(status, "Uid:\t1000\t1000\t1000\t1000\n")) << status;
  EXPECT_TRUE(Contains(status, "Gid:\t1000\t1000\t1000\t1000\n")) << status;
  EXPECT_TRUE(Contains(status, "\nGroups:\t \n")) << status;  // none
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_TRUE(Contains(status, std::string(set) + ":\t0000000000000000\n")) << status;
  EXPECT_TRUE(Contains(status, "NoNewPrivs:\t1\n")) << status;
  EXPECT_TRUE(Contains(status, "Seccomp:\t2\n")) << status;
}

// As in a namespaced run, the program starts with umask 022 whatever the caller's.
TEST(OuterIsolation, TheCallersUmaskStaysOutside) {
  const mode_t caller = ::umask(077);
  RunResult result = RunOuter({"/bin/sh", "-c", "umask; touch made && stat -c %A made"});
  ::umask(caller);
  ASSERT_EQ(result.status, RunStatus::kExited) << result.setup_error << result.stderr_data;
  EXPECT_EQ(result.stdout_data, "0022\n-rw-r--r--\n") << result.stderr_data;
}

// The caller's personality flags stay outside an outer run too (see Isolation's test).
TEST(OuterIsolation, TheCallersPersonalityFlagsStayOutside) {
  PersonalitySeen seen = PersonalityUnderSetarch([](const auto& argv) { return RunOuter(argv); });
  EXPECT_EQ(seen.host, "00060000\n");
  ASSERT_EQ(seen.inside.status, RunStatus::kExited) << seen.inside.setup_error << seen.inside.stderr_data;
  EXPECT_EQ(seen.inside.stdout_data, "00020000\n") << seen.inside.stderr_data;
}

// The init, the program's parent, keeps CAP_KILL alone (bit 5) to kill the program's tree, and
// an empty bounding set (emptied once, before the program's fork). It lowers the rest right
// after the spawn, since the program needs the init's CAP_SETUID until its own switch to uid 1000
// (meanwhile it cannot signal or trace the init, uid 0 and not dumpable). So the program reads the
// init's sets once no_new_privs, set after the drop, shows, giving up after two seconds.
TEST(OuterIsolation, TheInitKeepsOnlyTheKillCapability) {
  RunResult result = RunOuter({"/bin/sh", "-c",
                               "i=0; until grep -q '^NoNewPrivs:.1' /proc/$PPID/status || [ $i -eq 200 ]; "
                               "do sleep 0.01; i=$((i+1)); done; cat /proc/$PPID/status"});
  ASSERT_EQ(result.status, RunStatus::kExited) << result.stderr_data;
  const std::string& status = result.stdout_data;
  EXPECT_TRUE(Contains(status, "Name:\tsbx-init\n")) << status;
  EXPECT_TRUE(Contains(status, "CapPrm:\t0000000000000020\n")) << status;
  EXPECT_TRUE(Contains(status, "CapEff:\t0000000000000020\n")) << status;
  for (const char* set : {"CapInh", "CapBnd", "CapAmb"})
    EXPECT_TRUE(Contains(status, std::string(set) + ":\t0000000000000000\n")) << status;
  EXPECT_TRUE(Contains(status, "NoNewPrivs:\t1\n")) << status;
}

// Proof that "outer" is not namespaced: the policy says the runtime isolates, and so it must.
TEST(OuterIsolation, SharesTheHostsNetworkAndPidNamespaces) {
  const std::string read_ns = "readlink /proc/self/ns/pid /proc/self/ns/net /proc/self/ns/mnt; "
                              "cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' ' | sort | tr '\\n' ' '";
  HostRun host = RunOnHost({"/bin/sh", "-c", read_ns});
  const std::string runner = "/proc/" + std::to_string(::getpid());
  RunResult inside = RunOuter({"/bin/sh", "-c", read_ns + "; echo; test -d " + runner + " && echo sees-runner"});
  ASSERT_EQ(host.exit_code, 0) << host.output;
  ASSERT_EQ(inside.status, RunStatus::kExited) << inside.stderr_data;
  EXPECT_EQ(inside.stdout_data, host.output + "\nsees-runner\n");
  EXPECT_TRUE(Contains(host.output, "lo ")) << host.output;
}

// A double-forked daemon leaves the program's tree for the init (a subreaper) and dies with
// the run; the control: inside, it really had detached from the shell and was alive at the end.
TEST(OuterIsolation, KillsADoubleForkedDaemonWhenTheRunEnds) {
  OuterWorkspace workspace;
  const std::string script =
      "setsid sh -c 'sleep 30 & echo $! > daemon.pid'; sleep 0.2; d=$(cat daemon.pid); "
      "echo parent=$(cut -d' ' -f4 /proc/$d/stat) shell=$$ comm=$(cat /proc/$d/comm)";
  RunResult result = RunOuter({"/bin/sh", "-c", script}, OuterPolicy(), workspace.path());
  const std::string pid = Trimmed(workspace.Read("daemon.pid"));
  const bool survived = AliveAs(pid, "sleep");
  KillIfAlive(pid, "sleep");
  ASSERT_EQ(result.status, RunStatus::kExited) << result.stderr_data;
  ASSERT_FALSE(pid.empty());
  EXPECT_TRUE(Contains(result.stdout_data, "comm=sleep")) << result.stdout_data;
  EXPECT_FALSE(Contains(result.stdout_data, "parent=" + std::string(" "))) << result.stdout_data;
  const std::string shell = result.stdout_data.substr(result.stdout_data.find("shell=") + 6);
  EXPECT_FALSE(Contains(result.stdout_data, "parent=" + shell.substr(0, shell.find(' ')) + " "))
      << "the daemon did not detach: " << result.stdout_data;
  EXPECT_FALSE(survived) << "daemon " << pid << " outlived the run";
}

TEST(OuterIsolation, TheTimeoutKillsTheWholeTree) {
  OuterWorkspace workspace;
  Policy policy = OuterPolicy();
  policy.limits.timeout_seconds = 0.5;
  // Every process ignores SIGTERM (inherited through exec), so only the final kill ends them.
  const std::string script =
      "trap '' TERM; echo $$ > shell.pid; sleep 30 & echo $! > child.pid; "
      "setsid sh -c 'sleep 30 & echo $! > daemon.pid'; while :; do sleep 0.05; done";
  RunResult result = RunOuter({"/bin/sh", "-c", script}, policy, workspace.path());
  const std::string shell = Trimmed(workspace.Read("shell.pid"));
  const std::string child = Trimmed(workspace.Read("child.pid"));
  const std::string daemon = Trimmed(workspace.Read("daemon.pid"));
  const bool shell_alive = AliveAs(shell, "sh");
  const bool child_alive = AliveAs(child, "sleep"), daemon_alive = AliveAs(daemon, "sleep");
  KillIfAlive(shell, "sh");
  KillIfAlive(child, "sleep");
  KillIfAlive(daemon, "sleep");
  EXPECT_EQ(result.status, RunStatus::kTimedOut) << result.stderr_data;
  ASSERT_FALSE(shell.empty());
  ASSERT_FALSE(child.empty());
  ASSERT_FALSE(daemon.empty());
  EXPECT_FALSE(shell_alive);
  EXPECT_FALSE(child_alive);
  EXPECT_FALSE(daemon_alive);
  EXPECT_LT(result.wall_ms, 5000 * WallClockScale());
}

TEST(OuterIsolation, SeccompStillDeniesWhatTheHostAllows) {
  const std::vector<std::string> probes = {"ptrace", "bpf", "keyctl", "mount", "unshare-user"};
  std::vector<std::string> capless_argv = {
      "/usr/bin/setpriv", "--reuid=65534",       "--regid=65534", "--clear-groups",
      "--inh-caps=-all",  "--bounding-set=-all", "--no-new-privs", ProbePath("escape_probe")};
  std::vector<std::string> inside_argv = {ProbePath("escape_probe")};
  capless_argv.insert(capless_argv.end(), probes.begin(), probes.end());
  inside_argv.insert(inside_argv.end(), probes.begin(), probes.end());
  // The control: without capabilities and with no_new_privs but no filter, every call reaches
  // the kernel (a bad pointer's EFAULT and the like), so an EPERM inside is the filter's.
  HostRun capless = RunOnHost(capless_argv);
  RunResult inside = RunOuter(inside_argv);
  ASSERT_EQ(capless.exit_code, 0) << capless.output;
  ASSERT_EQ(inside.status, RunStatus::kExited) << inside.stderr_data;
  for (const auto& probe : probes) {
    EXPECT_TRUE(Contains("\n" + capless.output, "\n" + probe + " ")) << capless.output;
    EXPECT_FALSE(Contains(capless.output, probe + " EPERM\n")) << capless.output;
    EXPECT_TRUE(Contains(inside.stdout_data, probe + " EPERM\n")) << inside.stdout_data;
  }
}

TEST(OuterIsolation, RlimitsApply) {
  Policy policy = OuterPolicy();
  policy.limits.open_files = 77;
  policy.limits.file_size_bytes = 64 * 1024;
  HostRun host = RunOnHost({"/bin/sh", "-c", "ulimit -n; ulimit -f"});
  RunResult result = RunOuter({"/bin/sh", "-c", "ulimit -n; ulimit -f"}, policy);
  ASSERT_EQ(result.status, RunStatus::kExited) << result.stderr_data;
  EXPECT_NE(host.output, "77\n128\n");
  EXPECT_EQ(result.stdout_data, "77\n128\n");  // -f counts 512-byte blocks
}

TEST(OuterIsolation, RefusesANetworkItCannotEnforce) {
  for (NetworkMode mode : {NetworkMode::kNone, NetworkMode::kAllowlist}) {
    Policy policy = OuterPolicy();
    policy.network = mode;
    if (mode == NetworkMode::kAllowlist)
      policy.network_allowlist.allow.push_back(*ParseNetworkRule("pypi.org", "test"));
    const size_t before = EntriesWithPrefix("/tmp", "sbx-outer-").size();
    // Refused where a policy becomes a ValidPolicy, so it never reaches the launcher.
    auto result = ValidPolicy::Check(policy);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
    EXPECT_TRUE(Contains(result.error().message, "isolation")) << result.error().message;
    EXPECT_TRUE(Contains(result.error().message, "\"network\": \"host\"")) << result.error().message;
    EXPECT_EQ(EntriesWithPrefix("/tmp", "sbx-outer-").size(), before);
  }
}

TEST(OuterIsolation, LeavesNothingBehind) {
  const size_t before = EntriesWithPrefix("/tmp", "sbx-outer-").size();
  RunResult result = RunOuter({"/bin/sh", "-c", "echo x > file; mkdir -p $TMPDIR/a/b; ln -s / $TMPDIR/root"});
  EXPECT_EQ(result.status, RunStatus::kExited) << result.stderr_data;
  EXPECT_EQ(EntriesWithPrefix("/tmp", "sbx-outer-").size(), before);
  EXPECT_TRUE(::access("/bin/sh", X_OK) == 0);  // the symlink was removed, not followed
}

TEST(OuterIsolation, ThePoolRefusesIt) {
  executor::PoolOptions options;
  options.policy = Checked(OuterPolicy());
  auto pool = executor::SessionPool::Create(options);
  ASSERT_FALSE(pool);
  EXPECT_TRUE(Contains(pool.error().message, "isolation")) << pool.error().message;
}

// A cold Python session: the driver and the Python stack from the container's (here the host's)
// own root, state kept across blocks, uid 1000, nothing left in /tmp after the executor.
TEST(OuterIsolation, ASessionKeepsStateAndEndsClean) {
  const size_t before = EntriesWithPrefix("/tmp", "sbx-outer-").size();
  {
    executor::ExecutorOptions options;
    Policy policy = OuterPolicy();
    policy.limits.timeout_seconds = 30 * WallClockScale();
    options.policy = Checked(std::move(policy));
    options.outer_session_driver = std::string(SBX_SOURCE_TREE) + "/rootfs/session_driver.py";
    auto session = executor::SessionExecutor::Create(options);
    ASSERT_TRUE(session) << session.error().ToString();
    auto first = (*session)->Execute({{"python", "import os, numpy\nx = 41\nopen('notes.txt', 'w').write('hi')"}});
    ASSERT_TRUE(first) << first.error().ToString();
    EXPECT_EQ(first->exit_code, 0) << first->output;
    auto second = (*session)->Execute({{"python", "print(os.getuid(), open('notes.txt').read())\nx + 1"}});
    ASSERT_TRUE(second) << second.error().ToString();
    EXPECT_EQ(second->exit_code, 0) << second->output;
    EXPECT_EQ(second->stdout_text, "1000 hi\n");
    ASSERT_TRUE(second->value.has_value());
    EXPECT_EQ(*second->value, "42");
    // The executor's area (the workspace) and the running driver's (its TMPDIR).
    EXPECT_EQ(EntriesWithPrefix("/tmp", "sbx-outer-").size(), before + 2);
  }
  EXPECT_EQ(EntriesWithPrefix("/tmp", "sbx-outer-").size(), before);
}

HostRun Sbx(std::vector<std::string> args) {
  args.insert(args.begin(), SBX_BINARY);
  return RunOnHost(args);
}

TEST(OuterIsolationCli, TheFlagRunsOuterAndBadValuesAreRefused) {
  HostRun run = Sbx(
      {"run", "--isolation", "outer", "--network", "host", "--", "/bin/sh", "-c", "id -u; exit 4"});
  EXPECT_EQ(run.exit_code, 4);
  EXPECT_TRUE(Contains(run.output, "1000\n")) << run.output;
  HostRun bad = Sbx({"run", "--isolation", "gvisor", "--network", "host", "--", "/bin/true"});
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_TRUE(Contains(bad.output, "--isolation: \"gvisor\" is not an isolation mode")) << bad.output;
  HostRun no_network = Sbx({"run", "--isolation", "outer", "--", "/bin/true"});
  EXPECT_EQ(no_network.exit_code, 125);
  EXPECT_TRUE(Contains(no_network.output, "isolation: \"outer\"")) << no_network.output;
  EXPECT_TRUE(Contains(no_network.output, "\"network\": \"host\"")) << no_network.output;
  HostRun image = Sbx({"run", "--isolation", "outer", "--network", "host", "--image", "default", "--", "/bin/true"});
  EXPECT_EQ(image.exit_code, 125);
  EXPECT_TRUE(Contains(image.output, "--image")) << image.output;
}

TEST(OuterIsolationCli, ThePolicyFieldIsStrict) {
  ScratchDir dir;
  const std::string path = dir.path() + "/policy.json";
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"isolation": "outr", "network": "host"})", "isolation: \"outr\" is not an isolation mode"},
           {R"({"isolation": true, "network": "host"})", "isolation: expected"},
           {R"({"isolation": "outer"})", "isolation: \"outer\" has no network namespace"},
           {R"({"isolation": "outer", "network": "host"})", ""}}) {
    std::ofstream(path) << text;
    HostRun run = Sbx({"run", "--policy", path, "--", "/bin/true"});
    if (expected.empty()) {
      EXPECT_EQ(run.exit_code, 0) << text << ": " << run.output;
    } else {
      EXPECT_EQ(run.exit_code, 125) << text;
      EXPECT_TRUE(Contains(run.output, expected)) << text << ": " << run.output;
    }
  }
}

// sbx SIGKILLed mid-run: the init sees the sync socket hang up and kills the tree, daemon included.
TEST(OuterIsolationCli, TheTreeDiesWithTheRunner) {
  OuterWorkspace workspace;
  const std::vector<std::string> areas_before = EntriesWithPrefix("/tmp", "sbx-outer-");
  const pid_t runner = ::fork();
  if (runner == 0) {
    ::execl(SBX_BINARY, SBX_BINARY, "run", "--isolation", "outer", "--network", "host", "--workspace",
            workspace.path().c_str(), "--", "/bin/sh", "-c",
            "trap '' TERM; setsid sh -c 'sleep 30 & echo $! > daemon.pid'; sleep 30", nullptr);
    ::_exit(127);
  }
  ASSERT_GT(runner, 0);
  std::string daemon;
  for (int i = 0; i < 500 && !AliveAs(daemon, "sleep"); ++i) {
    ::usleep(10000);
    daemon = Trimmed(workspace.Read("daemon.pid"));
  }
  const bool started = AliveAs(daemon, "sleep");  // the control: it ran, detached
  ::kill(runner, SIGKILL);  // our unreaped child: its pid cannot have been reused
  int status = 0;
  ::waitpid(runner, &status, 0);
  bool alive = started;
  for (int i = 0; i < 200 && alive; ++i) {
    ::usleep(10000);
    alive = AliveAs(daemon, "sleep");
  }
  KillIfAlive(daemon, "sleep");
  EXPECT_TRUE(started) << "daemon " << daemon;
  EXPECT_FALSE(alive) << "daemon " << daemon << " outlived the runner";
  // The killed runner could not remove its private area; the next outer run sweeps it once it
  // is a minute old (younger, it may be a runner's in another pid namespace): aged here.
  std::vector<std::string> left;
  for (const std::string& area : EntriesWithPrefix("/tmp", "sbx-outer-")) {
    if (std::find(areas_before.begin(), areas_before.end(), area) != areas_before.end()) continue;
    left.push_back(area);
    const struct timespec old[2] = {{::time(nullptr) - 120, 0}, {::time(nullptr) - 120, 0}};
    EXPECT_EQ(::utimensat(AT_FDCWD, area.c_str(), old, AT_SYMLINK_NOFOLLOW), 0) << area;
  }
  EXPECT_EQ(left.size(), 1u);
  EXPECT_EQ(RunOuter({"/bin/true"}).status, RunStatus::kExited);
  for (const std::string& area : left) {
    EXPECT_NE(::access(area.c_str(), F_OK), 0) << area << " was not swept";
    (void)RemoveTree(area);
  }
}

// The program must run as another identity than sbx: as uid 65534 without capabilities sbx
// cannot switch ids, and refuses rather than run the program as itself.
TEST(OuterIsolationCli, RefusesWithoutRoot) {
  const size_t before = EntriesWithPrefix("/tmp", "sbx-outer-").size();
  HostRun run = RunOnHost({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           "--inh-caps=-all", "--bounding-set=-all", SBX_BINARY, "run", "--isolation",
                           "outer", "--network", "host", "--", "/bin/true"});
  EXPECT_EQ(run.exit_code, 125) << run.output;
  EXPECT_TRUE(Contains(run.output, "isolation: \"outer\" needs sbx to run as root")) << run.output;
  EXPECT_EQ(EntriesWithPrefix("/tmp", "sbx-outer-").size(), before);
  // The control: as root the same command runs.
  EXPECT_EQ(Sbx({"run", "--isolation", "outer", "--network", "host", "--", "/bin/true"}).exit_code, 0);
}

}  // namespace
}  // namespace sbx::testing
