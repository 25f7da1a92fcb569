// The `sbx` command-line contract: exit codes, --json, refusals that create nothing.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sandbox/workspace/workspace.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

HostRun Sbx(std::vector<std::string> args) {
  args.insert(args.begin(), SBX_BINARY);
  return RunOnHost(args);
}

size_t EntryCount(const std::string& dir) {
  size_t count = 0;
  if (DIR* handle = ::opendir(dir.c_str())) {
    while (::readdir(handle) != nullptr) ++count;
    ::closedir(handle);
  }
  return count;
}

// The value at JSON pointer `path` ("/a/b"); a missing key is a test failure, never a null that
// compares or converts like an absent value would.
const nlohmann::json& Field(const nlohmann::json& json, const std::string& path) {
  static const nlohmann::json kMissing = "<missing>";
  const nlohmann::json::json_pointer pointer(path);
  if (json.contains(pointer)) return json.at(pointer);
  ADD_FAILURE() << "no " << path << " in " << json.dump();
  return kMissing;
}

// Interface names from /proc/net/dev, sorted, one line.
constexpr const char* kInterfacesProbe =
    "print(' '.join(sorted(l.split(':')[0].strip() for l in "
    "open('/proc/net/dev').readlines()[2:])))";

TEST(Cli, PassesOutputAndExitCodeThrough) {
  HostRun run = Sbx({"run", "--", "/bin/sh", "-c", "echo hello; exit 9"});
  EXPECT_EQ(run.exit_code, 9);
  EXPECT_EQ(run.output, "hello\n");
}

// The sandbox's pid 1 starts as a copy of the runner: its command line (policy and log paths,
// every --env KEY=VALUE) must not be readable inside, where /proc/1/cmdline is world-readable.
TEST(Cli, TheRunnersCommandLineIsNotReadableInside) {
  const std::string marker = "sbx-argv-marker-5f1c";
  const std::string read_init =
      "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/1/comm; tr '\\0' ' ' < /proc/$$/cmdline";
  // The control: the same reads find the marker in a process's own command line.
  HostRun host = RunOnHost({"/bin/sh", "-c", read_init, marker});
  EXPECT_NE(host.output.find(marker), std::string::npos) << host.output;
  HostRun run = Sbx({"run", "--env", "MARKER=" + marker, "--", "/bin/sh", "-c",
                     "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/1/comm"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.find(marker), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("--env"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.rfind("sbx-init", 0), 0u) << run.output;
  EXPECT_NE(run.output.find("\nsbx-init\n"), std::string::npos) << "comm: " << run.output;
}

TEST(Cli, JsonPrintsOneObjectWithTheContractFields) {
  HostRun run = Sbx({"run", "--json", "--timeout", "0.5", "--", "/bin/sleep", "5"});
  EXPECT_EQ(run.exit_code, 124);
  const auto json = nlohmann::json::parse(run.output);  // stdout holds the object and nothing else
  EXPECT_EQ(Field(json, "/status"), "timed_out");
  EXPECT_EQ(Field(json, "/exit_code"), 124);
  EXPECT_EQ(Field(json, "/degraded"), nlohmann::json::array());
  EXPECT_EQ(Field(json, "/enforcement/seccomp"), "seccomp_bpf");
}

TEST(Cli, MissingCommandIs127AndSignalIs128PlusN) {
  HostRun missing = Sbx({"run", "--", "definitely-not-here"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.output.find("sbx: cannot run definitely-not-here in the sandbox: No such file"),
            std::string::npos) << missing.output;
  EXPECT_EQ(Sbx({"run", "--", "/bin/sh", "-c", "kill -KILL $$"}).exit_code, 137);
}

struct BadInvocation {
  std::vector<std::string> args;
  const char* must_mention;
};

TEST(Cli, BadInputIsRefusedWith125AndCreatesNothing) {
  auto state = StateDirectory();
  ASSERT_TRUE(state);
  size_t before = EntryCount(*state);
  ScratchDir dir;
  std::string bad_policy = dir.path() + "/bad.json";
  {
    std::ofstream(bad_policy) << R"({"limits": {"memroy_mb": 512}})";
  }
  // With proxy_env on, sbx sets the proxy variables; nothing else may name one.
  const std::string proxy_policy = dir.path() + "/proxy.json";
  std::ofstream(proxy_policy) << R"({"network": {"mode": "allowlist", "proxy_env": true}})";
  const std::string proxy_inject = dir.path() + "/proxy_inject.json";
  std::ofstream(proxy_inject) << R"({"network": {"mode": "allowlist", "proxy_env": true,
      "allow": ["api.test"], "inject": [{"name": "k", "hosts": ["api.test"],
      "header": "Authorization", "secret_from": "env:SBX_TEST_NO_SUCH_KEY",
      "sandbox_placeholder_env": "HTTPS_PROXY"}]}})";
  const std::vector<BadInvocation> cases = {
      {{"run", "--memory", "-1", "--", "true"}, "--memory"},
      {{"run", "--memory", "1T", "--", "true"}, "limits.memory"},
      {{"run", "--timeout", "0", "--", "true"}, "limits.timeout"},
      {{"run", "--pids", "1.5", "--", "true"}, "--pids"},
      {{"run", "--network", "bridge", "--", "true"}, "--network"},
      {{"run", "--env", "NOEQUALS", "--", "true"}, "--env"},
      {{"run", "--policy", proxy_policy, "--env", "HTTP_PROXY=http://x:1", "--", "true"},
       "env.HTTP_PROXY: network.proxy_env sets the proxy variables itself"},
      {{"run", "--policy", proxy_inject, "--", "true"},
       "network.inject[0].sandbox_placeholder_env: HTTPS_PROXY is a proxy variable"},
      {{"run", "--bogus", "1", "--", "true"}, "--bogus"},
      {{"run", "--policy", bad_policy, "--", "true"}, "limits.memroy_mb: unknown key"},
      {{"run", "--workspace", "relative/dir", "--", "true"}, "absolute path"},
      {{"run", "--workspace", "/proc", "--", "true"}, "system directories"},
      {{"run", "--workspace", "/", "--", "true"}, "too broad"},
      {{"run", "--image", "/usr", "--", "true"}, "sbx image build"},
      {{"run", "--"}, "no command"},
      {{"frobnicate"}, "unknown command"},
  };
  for (const auto& bad : cases) {
    HostRun run = Sbx(bad.args);
    EXPECT_EQ(run.exit_code, 125) << bad.must_mention << ": " << run.output;
    EXPECT_NE(run.output.find(bad.must_mention), std::string::npos) << run.output;
  }
  EXPECT_EQ(EntryCount(*state), before);
}

// The runner checks a CA file only for a PEM certificate block; sbx-netd parses it, and a
// block that is not X.509 still refuses the run, naming the field, the file and the block,
// before the program starts (it would leave a file in the workspace). Without the runner's
// wait for netd's verdict the program would race netd's refusal and usually lose it (the
// kill comes first), so a pass here is the contract, not proof of the wait.
TEST(Cli, ACaFileThatIsNotX509IsRefusedWith125NamingItBeforeTheProgramRuns) {
  ScratchDir dir;
  ScratchDir workspace;
  const std::string ca = dir.path() + "/corp.pem";
  const std::string policy = dir.path() + "/policy.json";
  {
    std::ofstream(ca) << "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n"
                         "-----END CERTIFICATE-----\n";
    std::ofstream(policy) << R"({"network": {"mode": "allowlist", "allow": ["example.test"],
                                             "extra_ca_files": [")" << ca << R"("]}})";
  }
  HostRun run = Sbx({"run", "--policy", policy, "--workspace", workspace.path(), "--",
                     "/bin/sh", "-c", "echo ran > /workspace/trace"});
  EXPECT_EQ(run.exit_code, 125) << run.output;
  EXPECT_NE(run.output.find("network.extra_ca_files[0]: " + ca +
                            ": certificate 1 of 1 is not valid X.509"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(std::filesystem::exists(workspace.path() + "/trace")) << "the program ran";

  // The control: with a valid policy the same program leaves its trace.
  {
    std::ofstream(policy) << R"({"network": {"mode": "allowlist", "allow": ["example.test"]}})";
  }
  HostRun control = Sbx({"run", "--policy", policy, "--workspace", workspace.path(),
                         "--network-log", dir.path() + "/network.jsonl", "--", "/bin/sh", "-c",
                         "echo ran > /workspace/trace"});
  EXPECT_EQ(control.exit_code, 0) << control.output;
  EXPECT_TRUE(std::filesystem::exists(workspace.path() + "/trace"));
}

// A CA bundle well above the control protocol's 64 KiB datagram (the image's own, about 200 KB)
// reaches sbx-netd whole: every certificate in it is parsed and the run goes ahead, with the
// whole bundle in the sandbox's trust store.
TEST(Cli, ALargeCaBundleInExtraCaFilesIsAccepted) {
  ScratchDir dir;
  const std::string bundle = TestImage() + "/etc/ssl/certs/ca-certificates.crt";
  const auto size = std::filesystem::file_size(bundle);
  ASSERT_GT(size, 100u * 1024) << bundle << " is too small to show anything";
  const std::string policy = dir.path() + "/policy.json";
  std::ofstream(policy) << R"({"network": {"mode": "allowlist", "allow": ["example.test"],
                                           "extra_ca_files": [")" << bundle << R"("]}})";
  HostRun run = Sbx({"run", "--policy", policy, "--network-log", dir.path() + "/network.jsonl",
                     "--", "/bin/sh", "-c", "wc -c < \"$SSL_CERT_FILE\""});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GE(std::atoll(run.output.c_str()), static_cast<long long>(2 * size)) << run.output;
}

// Beyond the documented bound (1 MiB a file) the run is refused, naming the field.
TEST(Cli, ACaFileOverTheBoundIsRefusedWith125NamingIt) {
  ScratchDir dir;
  const std::string bundle = TestImage() + "/etc/ssl/certs/ca-certificates.crt";
  const std::string big = dir.path() + "/big.pem";
  {
    std::ifstream in(bundle);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    ASSERT_FALSE(text.empty());
    std::ofstream out(big);
    for (size_t written = 0; written <= (1u << 20); written += text.size()) out << text;
  }
  const std::string policy = dir.path() + "/policy.json";
  std::ofstream(policy) << R"({"network": {"mode": "allowlist", "allow": ["example.test"],
                                           "extra_ca_files": [")" << big << R"("]}})";
  HostRun run = Sbx({"run", "--policy", policy, "--", "/bin/true"});
  EXPECT_EQ(run.exit_code, 125) << run.output;
  EXPECT_NE(run.output.find("network.extra_ca_files[0]: " + big + ": larger than 1 MiB"),
            std::string::npos)
      << run.output;
}

TEST(Cli, OversizedArgumentIsRefusedBeforeAnythingIsCreated) {
  // Above the kernel's per-argument limit the CLI could not even be started with it, so the
  // library call is the place to check.
  RunSpec spec;
  spec.argv = {"/bin/echo", std::string(200000, 'a')};
  spec.image_dir = TestImage();
  auto result = RunSandboxed(spec);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("128 KiB"), std::string::npos) << result.error().message;
}

TEST(Cli, SecondConcurrentRunOnAWorkspaceIsRefused) {
  ScratchDir workspace;
  // The first run holds the workspace from its "started" file until the test writes "done".
  pid_t first = ::fork();
  if (first == 0) {
    ::execl(SBX_BINARY, SBX_BINARY, "run", "--workspace", workspace.path().c_str(), "--", "/bin/sh",
            "-c", "touch /workspace/started; while [ ! -e /workspace/done ]; do sleep 0.02; done",
            nullptr);
    ::_exit(127);
  }
  const std::string started = workspace.path() + "/started";
  const int polls = static_cast<int>(1000 * WallClockScale());  // of 10 ms each
  for (int i = 0; i < polls && ::access(started.c_str(), F_OK) != 0; ++i) ::usleep(10000);
  EXPECT_EQ(::access(started.c_str(), F_OK), 0) << "the first run never started";
  HostRun second = Sbx({"run", "--workspace", workspace.path(), "--", "/bin/true"});
  std::ofstream(workspace.path() + "/done") << "";
  EXPECT_EQ(second.exit_code, 125);
  EXPECT_NE(second.output.find("in use by another sbx run"), std::string::npos) << second.output;
  int status = 0;
  ::waitpid(first, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Runs sbx as `uid` (an ordinary uid with no passwd entry, no supplementary groups), with the
// image cache at root's (any user may run that image) and its stdout and stderr together.
HostRun SbxAsUser(uid_t uid, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SBX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunOnHost(argv, [uid] {
    return ::setgroups(0, nullptr) == 0 && ::setresgid(uid, uid, uid) == 0 && ::setresuid(uid, uid, uid) == 0 &&
           ::setenv("XDG_CACHE_HOME", "/var/cache", 1) == 0;
  });
}

constexpr uid_t kTestUid = 43210;

TEST(Cli, RootlessModeMapsTheCallerTo1000) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged test uid";
  // No cgroup is writable for an ordinary user here, so the policy must accept rlimits.
  HostRun run = SbxAsUser(kTestUid, {"run", "--allow-degraded", "cgroup", "--image", TestImage(), "--",
                                     "/bin/sh", "-c", "id -u; cat /proc/self/uid_map | tr -s ' '"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "1000\n 1000 43210 1\n");
}

// `sbx doctor`'s verdict is what `sbx run` with the default policy then does, for root and for
// an ordinary user; where the user's run refuses (no cgroup it may write), doctor says so and
// names both fixes, and the second fix works.
TEST(Cli, DoctorsVerdictIsWhatTheDefaultRunDoes) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged test uid";
  HostRun root_doctor = Sbx({"doctor", "--json"});
  const auto root_verdict = nlohmann::json::parse(root_doctor.output);
  HostRun root_run = Sbx({"run", "--", "/bin/true"});
  EXPECT_EQ(Field(root_verdict, "/default_run/runs"), true) << root_doctor.output;
  EXPECT_EQ(root_doctor.exit_code, 0);
  EXPECT_EQ(root_run.exit_code, 0) << root_run.output;

  HostRun user_doctor = SbxAsUser(kTestUid, {"doctor", "--json"});
  const auto user_verdict = nlohmann::json::parse(user_doctor.output);
  HostRun user_run = SbxAsUser(kTestUid, {"run", "--", "/bin/true"});
  EXPECT_EQ(Field(user_verdict, "/can_run_safely"), true) << user_doctor.output;
  // On this host an ordinary user may write no cgroup (v1 hierarchies owned by root, v2 with
  // no delegated controllers): the refusal this test is about.
  ASSERT_EQ(Field(user_verdict, "/default_run/runs"), false) << user_doctor.output;
  EXPECT_EQ(user_doctor.exit_code, 1);
  EXPECT_EQ(user_run.exit_code, 125) << user_run.output;
  const std::string refusal = Field(user_verdict, "/default_run/refusal");
  EXPECT_NE(refusal.find("allow_degraded"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("Delegate=yes"), std::string::npos) << refusal;
  EXPECT_NE(user_run.output.find("no usable cgroup"), std::string::npos) << user_run.output;
  EXPECT_NE(refusal.find("no usable cgroup"), std::string::npos) << refusal;
  HostRun degraded = SbxAsUser(kTestUid, {"run", "--allow-degraded", "cgroup", "--", "/bin/true"});
  EXPECT_EQ(degraded.exit_code, 0) << degraded.output;
}

// --network host shares the host's interfaces: the sandbox lists exactly the host's names (and
// more than lo, or the comparison would prove nothing).
// The caller's real-time policy, negative nice value and real-time I/O class stay outside: a
// real-time program would escape the cpu limit, and a v1 cpu cgroup refused to take it in (the
// run failed). The control: the same chain around the host's Python passes all three on.
TEST(Cli, TheCallersPriorityStaysOutside) {
  const std::vector<std::string> raised = {"/usr/bin/chrt", "-f", "10", "/usr/bin/nice", "-n",
                                           "-30", "/usr/bin/ionice", "-c", "1", "-n", "0"};
  const std::vector<std::string> probe = {
      "/usr/bin/python3", "-c",
      "import ctypes, os; ioprio = ctypes.CDLL(None).syscall(252, 1, 0)\n"  // ioprio_get
      "print(os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0), ioprio >> 13)"};
  std::vector<std::string> host = raised;
  host.insert(host.end(), probe.begin(), probe.end());
  EXPECT_EQ(RunOnHost(host).output, "1 -20 1\n");  // SCHED_FIFO, nice -20, the real-time class

  const std::vector<std::vector<std::string>> limit_flags = {
      {}, {"--cgroup", "none", "--allow-degraded", "cgroup"}};  // the default's cgroup; rlimits
  for (const std::vector<std::string>& limits : limit_flags) {
    std::vector<std::string> argv = raised;
    argv.insert(argv.end(), {SBX_BINARY, "run"});
    argv.insert(argv.end(), limits.begin(), limits.end());
    argv.push_back("--");
    argv.insert(argv.end(), probe.begin(), probe.end());
    HostRun run = RunOnHost(argv);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(run.output, "0 0 0\n");  // SCHED_OTHER, nice 0, no class
  }
}

// A caller shielded from the OOM killer (oom_score_adj below 0) does not shield the sandbox: its
// program starts at 0, namespaced and outer. A positive value stays. The control: the host's cat
// under the same choom shows -500. Lowering needs CAP_SYS_RESOURCE, which some hosts withhold
// even from root; there the cgroup v2 VM's step runs this test (tests/cgroup2_vm_suite.sh).
TEST(Cli, TheCallersOomProtectionStaysOutside) {
  const std::vector<std::string> shielded = {"/usr/bin/choom", "-n", "-500", "--"};
  std::vector<std::string> host = shielded;
  host.insert(host.end(), {"/bin/cat", "/proc/self/oom_score_adj"});
  HostRun control = RunOnHost(host);
  if (control.exit_code != 0 && control.output.find("Permission denied") != std::string::npos &&
      !InCgroup2Vm()) {
    GTEST_SKIP() << "this host cannot lower oom_score_adj (no CAP_SYS_RESOURCE); the cgroup v2 VM runs it";
  }
  EXPECT_EQ(control.output, "-500\n");
  // Outer isolation has no network namespace to enforce "none" with.
  const std::vector<std::vector<std::string>> isolations = {
      {"--isolation", "namespaces"}, {"--isolation", "outer", "--network", "host"}};
  for (const std::vector<std::string>& isolation : isolations) {
    std::vector<std::string> argv = shielded;
    argv.insert(argv.end(), {SBX_BINARY, "run"});
    argv.insert(argv.end(), isolation.begin(), isolation.end());
    argv.insert(argv.end(), {"--", "/bin/cat", "/proc/self/oom_score_adj"});
    HostRun run = RunOnHost(argv);
    EXPECT_EQ(run.exit_code, 0) << isolation[1] << ": " << run.output;
    // The output's last line: --network host adds a warning on stderr before it.
    const size_t last = run.output.size() < 2 ? std::string::npos : run.output.rfind('\n', run.output.size() - 2);
    EXPECT_EQ(last == std::string::npos ? run.output : run.output.substr(last + 1), "0\n")
        << isolation[1] << ": " << run.output;
  }
  HostRun exposed = RunOnHost({"/usr/bin/choom", "-n", "300", "--", SBX_BINARY, "run", "--",
                               "/bin/cat", "/proc/self/oom_score_adj"});
  EXPECT_EQ(exposed.output, "300\n") << exposed.exit_code;
}

// Where the runner's policy cannot even be read (a container's seccomp profile refusing
// sched_getscheduler), the child is set to SCHED_OTHER all the same and the run goes on.
TEST(Cli, AnUnreadablePolicyIsLoweredAllTheSame) {
  // The policy is field 41 of /proc/self/stat; the program cannot ask sched_getscheduler either.
  const std::string probe = "import re; print(re.sub(r'.*\\) ', '', open('/proc/self/stat').read())"
                            ".split()[38])";
  EXPECT_EQ(RunOnHost({"/usr/bin/chrt", "-f", "10", "/usr/bin/python3", "-c", probe}).output,
            "1\n");  // the control: SCHED_FIFO
  HostRun run = RunOnHost({"/usr/bin/chrt", "-f", "10", SBX_BINARY, "run", "--", "/usr/bin/python3",
                           "-c", probe},
                          DenySyscall(SYS_sched_getscheduler));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "0\n");
}

// `--stdin -` from a terminal hands the program a pipe fed from it, not the terminal: with the
// terminal the program could turn its echo off for the caller's shell, or write to it past the
// capture and --json. Input still flows. The control: a program run on the host from the same
// terminal has the terminal.
TEST(Cli, StdinFromATerminalReachesTheProgramThroughAPipe) {
  const int terminal = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(terminal, 0) << std::strerror(errno);
  ASSERT_EQ(::grantpt(terminal), 0);
  ASSERT_EQ(::unlockpt(terminal), 0);
  const std::string line_end = ::ptsname(terminal);
  auto from_terminal = [&line_end] {
    const int fd = ::open(line_end.c_str(), O_RDWR | O_NOCTTY);
    return fd >= 0 && ::dup2(fd, 0) == 0;
  };
  const std::string probe = "read line; echo got $line; test -t 0 && echo terminal || echo pipe";
  ASSERT_EQ(::write(terminal, "hello\n", 6), 6);
  EXPECT_EQ(RunOnHost({"/bin/sh", "-c", probe}, from_terminal).output, "got hello\nterminal\n");
  ASSERT_EQ(::write(terminal, "hello\n", 6), 6);
  HostRun run =
      RunOnHost({SBX_BINARY, "run", "--stdin", "-", "--", "/bin/sh", "-c", probe}, from_terminal);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "got hello\npipe\n");
  ::close(terminal);
}

TEST(Cli, NetworkHostIsLoudAndShared) {
  HostRun host = RunOnHost({"/usr/bin/python3", "-c", kInterfacesProbe});
  ASSERT_EQ(host.exit_code, 0) << host.output;
  ASSERT_NE(host.output, "lo\n") << "the host has only lo";
  HostRun run = Sbx({"run", "--network", "host", "--", "/usr/bin/python3", "-c", kInterfacesProbe});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("warning: --network host"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\n" + host.output), std::string::npos)
      << "host: " << host.output << "sandbox: " << run.output;
}

TEST(Cli, DoctorSaysThisHostCanRunSbx) {
  HostRun run = Sbx({"doctor", "--json"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const auto json = nlohmann::json::parse(run.output);
  EXPECT_EQ(Field(json, "/can_run_safely"), true);
  EXPECT_EQ(Field(json, "/features/user_namespaces/available"), true);
  EXPECT_EQ(Field(json, "/features/seccomp/available"), true);
}

TEST(Cli, WithoutAWorkspaceTheRunGetsABoundedTmpfsAndTheHostDiskNothing) {
  auto state = StateDirectory();
  ASSERT_TRUE(state);
  const size_t before = EntryCount(*state);
  char policy_path[] = "/tmp/sbx-cli-policy-XXXXXX";
  const int policy_fd = ::mkstemp(policy_path);
  ASSERT_GE(policy_fd, 0);
  ::close(policy_fd);
  std::ofstream(policy_path) << R"({"limits": {"tmp_size": "2M"}})";
  HostRun run = Sbx({"run", "--policy", policy_path, "--", "/bin/sh", "-c",
                     "stat -f -c %T /workspace; stat -c %u:%a /workspace; echo x > /workspace/f; "
                     "cat /workspace/f; head -c 3M /dev/zero > /workspace/big || echo full"});
  ::unlink(policy_path);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // stdout and stderr are forwarded separately: head's complaint may land between the lines.
  EXPECT_NE(run.output.find("tmpfs\n1000:700\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\nx\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("No space left on device"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("full\n"), std::string::npos) << run.output;
  EXPECT_EQ(EntryCount(*state), before);
}

TEST(Cli, AgentIsSbxAgentNextToSbx) {
  HostRun run = Sbx({"agent", "--help"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("usage: sbx agent"), std::string::npos) << run.output;

  // A copy of sbx alone in a directory: `agent` names the missing program, runs nothing else.
  char dir_template[] = "/tmp/sbx-cli-alone-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  std::filesystem::copy_file(SBX_BINARY, dir + "/sbx");
  HostRun alone = RunOnHost({dir + "/sbx", "agent", "--task", "x"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(alone.exit_code, 125);
  EXPECT_NE(alone.output.find(dir + "/sbx-agent"), std::string::npos) << alone.output;
}

// The cgroup directories of the runs of sbx process `pid` (sbx-<pid>-<run id>), in every
// hierarchy mounted under /sys/fs/cgroup.
std::vector<std::string> RunCgroupsOf(pid_t pid) {
  const std::string prefix = "sbx-" + std::to_string(pid) + "-";
  std::vector<std::string> found;
  std::error_code error;
  namespace fs = std::filesystem;
  for (fs::recursive_directory_iterator it("/sys/fs/cgroup", fs::directory_options::skip_permission_denied, error), end;
       !error && it != end; it.increment(error)) {
    if (it.depth() > 4) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(error) && it->path().filename().string().rfind(prefix, 0) == 0) {
      found.push_back(it->path().string());
      it.disable_recursion_pending();
    }
  }
  return found;
}

// Ctrl-C, a hang-up or SIGTERM to `sbx run` ends the run like its timeout: the program's tree is
// killed, the run's cgroups are removed, and sbx exits with 128 + the signal.
TEST(Cli, AStopSignalEndsTheRunAndRemovesItsCgroups) {
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE(strsignal(signal));
    ScratchDir workspace;
    const pid_t sbx = ::fork();
    ASSERT_GE(sbx, 0);
    if (sbx == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(SBX_BINARY, SBX_BINARY, "run", "--workspace", workspace.path().c_str(), "--", "/bin/sh", "-c",
              "touch /workspace/started; while :; do touch /workspace/alive; sleep 0.05; done", nullptr);
      ::_exit(127);
    }
    const std::string started = workspace.path() + "/started", alive = workspace.path() + "/alive";
    const int polls = static_cast<int>(1000 * WallClockScale());  // of 10 ms each
    for (int i = 0; i < polls && ::access(started.c_str(), F_OK) != 0; ++i) ::usleep(10000);
    ASSERT_EQ(::access(started.c_str(), F_OK), 0) << "the run never started";
    EXPECT_FALSE(RunCgroupsOf(sbx).empty()) << "the default policy's run has no cgroup to look for";
    ASSERT_EQ(::kill(sbx, signal), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(sbx, &status, 0), sbx);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + signal) << "status " << status;
    EXPECT_EQ(RunCgroupsOf(sbx), std::vector<std::string>{});
    // The loop touched "alive" every 50 ms; killed, it touches it no more.
    ::unlink(alive.c_str());
    ::usleep(static_cast<useconds_t>(300000 * WallClockScale()));
    EXPECT_NE(::access(alive.c_str(), F_OK), 0) << "the program outlived sbx";
  }
}

// What `sbx run` leaves when it exits: nothing. Its sandbox's init and sbx-netd are reaped in
// the background (reap_later.h), and the CLI waits for that before it exits; were it not to,
// they would be orphaned to the nearest subreaper (here a forked watcher) or to pid 1, which in
// a container may never reap them.
TEST(Cli, ExitsOnlyOnceItsInitAndHelperAreReaped) {
  ScratchDir logs;
  const std::vector<std::vector<std::string>> runs = {
      {"run", "--cgroup", "none", "--allow-degraded", "cgroup", "--", "/bin/true"},
      {"run", "--cgroup", "none", "--allow-degraded", "cgroup", "--allow", "allowed.example",
       "--network-log", logs.path() + "/net.jsonl", "--", "/bin/true"},
      {"run", "--", "/bin/true"},
  };
  for (const auto& args : runs) {
    const pid_t watcher = ::fork();
    ASSERT_GE(watcher, 0);
    if (watcher == 0) {
      // Exit codes: 0 nothing was orphaned to us, 1 something was, 2 sbx failed, 3 setup.
      if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) ::_exit(3);
      const pid_t sbx = ::fork();
      if (sbx < 0) ::_exit(3);
      if (sbx == 0) {
        std::vector<char*> argv = {const_cast<char*>(SBX_BINARY)};
        for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
        argv.push_back(nullptr);
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execv(SBX_BINARY, argv.data());
        ::_exit(127);
      }
      int status = 0;
      if (::waitpid(sbx, &status, 0) != sbx) ::_exit(3);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ::_exit(2);
      // A child of sbx's still exiting (0) or a zombie of one (its pid) would be ours now.
      const pid_t orphan = ::waitpid(-1, nullptr, WNOHANG);
      ::_exit(orphan == -1 && errno == ECHILD ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(watcher, &status, 0), watcher);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "sbx " << args[1] << " ... " << args.back()
                                      << (WEXITSTATUS(status) == 1 ? ": left a child behind" : ": failed");
  }
}

}  // namespace
}  // namespace sbx::testing
