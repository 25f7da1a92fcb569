// What a sandboxed program can see and do, each probe also run on the host as the control.
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(Isolation, HostFilesOutsideImageAndWorkspaceAreInvisible) {
  ScratchDir marker_dir;
  std::string marker = marker_dir.path() + "/host-secret";
  std::ofstream(marker) << "secret";
  EXPECT_EQ(RunOnHost({"/bin/cat", marker}).output, "secret");  // control
  RunResult inside = RunInSandbox({"/bin/sh", "-c", "cat " + marker + "; ls /root /home; cat /etc/shadow"});
  EXPECT_FALSE(Contains(inside.stdout_data, "secret"));
  EXPECT_TRUE(Contains(inside.stderr_data, "No such file or directory")) << inside.stderr_data;
}

// /proc entries that show host kernel state are empty: files bound to /dev/null, directories
// under an empty tmpfs, /proc/sys read-only. The control reads the same entries on the host.
TEST(Isolation, HostKernelStateInProcIsMasked) {
  const std::string probe =
      "for f in /proc/kallsyms /proc/timer_list /proc/keys; do printf '%s ' $(wc -c < $f); done; "
      "grep -c ' /proc/sys ro,' /proc/self/mountinfo; ls -A /proc/tty/driver | wc -l";
  HostRun host = RunOnHost({"/bin/sh", "-c", probe});
  EXPECT_FALSE(Contains(host.output, "0 0 ")) << host.output;  // the host shows its kernel's state
  RunResult inside = RunInSandbox({"/bin/sh", "-c", probe});
  EXPECT_EQ(inside.stdout_data, "0 0 0 1\n0\n") << inside.stderr_data;
}

TEST(Isolation, ImageIsReadOnlyForTheProgramAndWritesVanish) {
  // /etc is the overlay's (root's files: permission denied); /usr the image's own, read-only.
  RunResult first = RunInSandbox({"/bin/sh", "-c",
                                  "echo x > /etc/sbx-probe; echo $?; echo x > /usr/sbx-probe; echo $?; "
                                  "echo y > /tmp/sbx-probe; cat /tmp/sbx-probe"});
  EXPECT_EQ(first.stdout_data, "2\n2\ny\n") << first.stderr_data;  // sh: 2 = redirection failed
  EXPECT_TRUE(Contains(first.stderr_data, "Permission denied")) << first.stderr_data;
  EXPECT_TRUE(Contains(first.stderr_data, "Read-only file system")) << first.stderr_data;
  RunResult second = RunInSandbox({"/bin/sh", "-c", "ls /tmp /etc/sbx-probe /usr/sbx-probe"});
  EXPECT_FALSE(Contains(second.stdout_data, "sbx-probe"));
  EXPECT_EQ(::access((TestImage() + "/etc/sbx-probe").c_str(), F_OK), -1);
  EXPECT_EQ(::access((TestImage() + "/usr/sbx-probe").c_str(), F_OK), -1);
}

TEST(Isolation, NoHostProcessesVisible) {
  // A host process with a command line of its own (by pid alone the check would mean nothing
  // where the test itself is a low pid, as pid 1 of a container).
  const pid_t marker = ::fork();
  if (marker == 0) {
    ::execl("/bin/sleep", "sleep", "4242.4242", nullptr);
    ::_exit(127);
  }
  ASSERT_GT(marker, 0);
  for (int i = 0; i < 500 && HostProcessesWith("4242.4242").empty(); ++i) ::usleep(10000);
  // Control: the host lists it, by pid and by its command line.
  EXPECT_TRUE(Contains(RunOnHost({"/bin/ls", "/proc"}).output, std::to_string(marker)));
  EXPECT_FALSE(HostProcessesWith("4242.4242").empty());
  RunResult inside = RunInSandbox(
      {"/bin/sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '"});
  ::kill(marker, SIGKILL);
  ::waitpid(marker, nullptr, 0);
  EXPECT_FALSE(Contains(inside.stdout_data, "4242.4242")) << inside.stdout_data;
  const std::string pids = inside.stdout_data.substr(inside.stdout_data.find('\n') + 1);
  // pid 1 (the init), the shell, and at most the pipeline's helpers: nothing from the host.
  EXPECT_EQ(pids.rfind("1 ", 0), 0u) << pids;
  int count = 0;
  for (char c : pids) count += c == ' ';
  EXPECT_LE(count, 8) << pids;
}

TEST(Isolation, HostnameIsSandbox) {
  EXPECT_EQ(RunInSandbox({"/bin/hostname"}).stdout_data, "sandbox\n");
}

TEST(Isolation, LocalhostResolvesToTheSandboxLoopback) {
  RunResult inside = RunInSandbox({"/usr/bin/python3", "-c",
                                   "import socket; print(socket.gethostbyname('localhost'))"});
  EXPECT_EQ(inside.stdout_data, "127.0.0.1\n") << inside.stderr_data;
}

TEST(Isolation, OnlyLoopbackAndNoRouteToHostListeners) {
  // A listener on the host's loopback: reachable from the host, not from the sandbox.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t length = sizeof(address);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::string port = std::to_string(ntohs(address.sin_port));
  std::string connect = "import socket; s=socket.socket(); s.settimeout(2)\n"
                        "try:\n s.connect(('127.0.0.1'," + port + ")); print('connected')\n"
                        "except OSError as e: print('refused', e.errno)\n";
  EXPECT_EQ(RunOnHost({"/usr/bin/python3", "-c", connect}).output, "connected\n");
  RunResult inside = RunInSandbox({"/usr/bin/python3", "-c", connect});
  EXPECT_EQ(inside.stdout_data, "refused 111\n") << inside.stderr_data;
  RunResult interfaces = RunInSandbox({"/bin/sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"});
  EXPECT_EQ(interfaces.stdout_data, "lo\n");
  ::close(listener);
}

TEST(Isolation, NoCapabilitiesAndNoNewPrivs) {
  RunResult inside = RunInSandbox({"/bin/grep", "-E", "^(Cap|NoNewPrivs|Seccomp:|Uid|Gid)", "/proc/self/status"});
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_TRUE(Contains(inside.stdout_data, std::string(set) + ":\t0000000000000000")) << set;
  EXPECT_TRUE(Contains(inside.stdout_data, "NoNewPrivs:\t1"));
  EXPECT_TRUE(Contains(inside.stdout_data, "Seccomp:\t2"));
  EXPECT_TRUE(Contains(inside.stdout_data, "Uid:\t1000\t1000\t1000\t1000"));
}

// The init outlives the program's setup and the program can signal it in rootless mode: it must
// hold nothing either, its bounding set included (emptied once, before the program's fork).
TEST(Isolation, TheInitHoldsNoCapabilities) {
  RunResult inside = RunInSandbox({"/bin/grep", "-E", "^(Name|Cap|NoNewPrivs)", "/proc/1/status"});
  EXPECT_TRUE(Contains(inside.stdout_data, "Name:\tsbx-init")) << inside.stdout_data;
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_TRUE(Contains(inside.stdout_data, std::string(set) + ":\t0000000000000000")) << set;
  EXPECT_TRUE(Contains(inside.stdout_data, "NoNewPrivs:\t1"));
}

// The caller's umask stays outside: under 077 the sandbox's own mount points would be 0700 and
// its user could not even enter its root. The sandbox starts with 022.
TEST(Isolation, TheCallersUmaskStaysOutside) {
  const mode_t caller = ::umask(077);
  RunResult inside = RunInSandbox(
      {"/bin/sh", "-c", "umask; stat -c %A /; touch /workspace/a /tmp/b && echo written"});
  ::umask(caller);
  EXPECT_EQ(inside.status, RunStatus::kExited) << inside.setup_error;
  EXPECT_EQ(inside.stdout_data, "0022\ndrwxr-xr-x\nwritten\n") << inside.stderr_data;
}

// The caller's personality flags stay outside: under `setarch -R` or a debugger the runner has
// ADDR_NO_RANDOMIZE, which the seccomp filter refuses the program. What the filter allows
// (UNAME26 here) passes; the host's cat, the control, inherits both.
TEST(Isolation, TheCallersPersonalityFlagsStayOutside) {
  PersonalitySeen seen = PersonalityUnderSetarch([](const auto& argv) { return RunInSandbox(argv); });
  EXPECT_EQ(seen.host, "00060000\n");
  EXPECT_EQ(seen.inside.status, RunStatus::kExited) << seen.inside.setup_error;
  EXPECT_EQ(seen.inside.stdout_data, "00020000\n") << seen.inside.stderr_data;
}

TEST(Isolation, RunnerBinaryAndInitAreUnreachable) {
  RunResult inside = RunInSandbox({"/bin/sh", "-c", "readlink /proc/1/exe; cat /proc/1/environ; echo end"});
  EXPECT_EQ(inside.stdout_data, "end\n");
  EXPECT_TRUE(Contains(inside.stderr_data, "Permission denied")) << inside.stderr_data;
}

TEST(Isolation, PrivilegedCallsAreDeniedButWorkOnTheHost) {
  ScratchDir workspace;
  StageProbe("escape_probe", workspace.path());
  const std::vector<std::string> probes = {"mount", "umount", "unshare-user", "unshare-mount",
                                           "setns", "ptrace", "bpf", "keyctl", "io_uring",
                                           "pivot_root", "chroot", "perf_event_open", "fsopen",
                                           "open_tree", "kexec_load", "init_module", "userfaultfd"};
  std::vector<std::string> host_argv = {ProbePath("escape_probe")};
  std::vector<std::string> sandbox_argv = {"/workspace/escape_probe"};
  host_argv.insert(host_argv.end(), probes.begin(), probes.end());
  sandbox_argv.insert(sandbox_argv.end(), probes.begin(), probes.end());
  // Two controls. As root, each call reaches the kernel. Without any capability and with
  // no_new_privs (as the program runs, but without the filter), each still reaches it: the bad
  // pointer or fd fails first, and the calls that check a capability first (unshare of a
  // mount namespace, pivot_root, fsopen) come after unshare(CLONE_NEWUSER), which gives the
  // process every capability in its own namespace. So an EPERM inside is the filter's, never
  // a missing capability's.
  HostRun host = RunOnHost(host_argv);
  std::vector<std::string> capless_argv = {
      "/usr/bin/setpriv", "--reuid=65534",       "--regid=65534", "--clear-groups",
      "--inh-caps=-all",  "--bounding-set=-all", "--no-new-privs"};
  capless_argv.insert(capless_argv.end(), host_argv.begin(), host_argv.end());
  HostRun capless = RunOnHost(capless_argv);
  RunResult inside = RunInSandbox(sandbox_argv, Policy{}, workspace.path());
  ASSERT_EQ(host.exit_code, 0) << host.output;
  ASSERT_EQ(capless.exit_code, 0) << capless.output;
  ASSERT_EQ(inside.status, RunStatus::kExited) << inside.stderr_data;
  for (const auto& probe : probes) {
    // In the controls the call reached the kernel: a harmless EFAULT/EBADF/..., a success, or
    // ENOSYS where this kernel lacks the call. Inside, the filter's own answer differs from
    // every one of those.
    const std::string expected = probe == "io_uring" ? "ENOSYS" : "EPERM";
    for (const HostRun* control : {&host, &capless}) {
      EXPECT_TRUE(Contains("\n" + control->output, "\n" + probe + " "))
          << probe << " did not run: " << control->output;
      EXPECT_FALSE(Contains(control->output, probe + " " + expected + "\n"))
          << "control: " << control->output;
    }
    EXPECT_TRUE(Contains(inside.stdout_data, probe + " " + expected + "\n")) << inside.stdout_data;
  }
}

TEST(Isolation, RunnerEnvironmentNeverPasses) {
  ::setenv("SBX_TEST_API_KEY", "sk-should-never-leak", 1);
  RunResult inside = RunInSandbox({"/usr/bin/env"});
  ::unsetenv("SBX_TEST_API_KEY");
  EXPECT_FALSE(Contains(inside.stdout_data, "sk-should-never-leak"));
  EXPECT_TRUE(Contains(inside.stdout_data, "HOME=/workspace\n"));
  EXPECT_TRUE(Contains(inside.stdout_data, "MPLBACKEND=Agg\n"));
  Policy policy;
  policy.env["GREETING"] = "hello";
  EXPECT_TRUE(Contains(RunInSandbox({"/usr/bin/env"}, policy).stdout_data, "GREETING=hello\n"));
}

// The program starts with no signal blocked or ignored, whatever the runner's thread had; the
// host control, forked from the same thread, inherits both.
TEST(Isolation, RunnerSignalMaskAndIgnoredSignalsNeverPass) {
  sigset_t blocked, saved_mask;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  sigaddset(&blocked, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &blocked, &saved_mask), 0);
  auto saved_pipe = ::signal(SIGPIPE, SIG_IGN);
  auto saved_hup = ::signal(SIGHUP, SIG_IGN);
  const std::vector<std::string> probe = {"/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"};
  HostRun host = RunOnHost(probe);
  RunResult inside = RunInSandbox(probe);
  ::signal(SIGPIPE, saved_pipe);
  ::signal(SIGHUP, saved_hup);
  ::pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  EXPECT_FALSE(Contains(host.output, "SigBlk:\t0000000000000000")) << host.output;
  EXPECT_FALSE(Contains(host.output, "SigIgn:\t0000000000000000")) << host.output;
  EXPECT_EQ(inside.stdout_data, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n") << inside.stderr_data;
}

TEST(Isolation, StdinIsDevNullAndNoFdsLeak) {
  int leaked = ::open("/etc/hostname", O_RDONLY);  // not CLOEXEC on purpose
  ASSERT_GE(leaked, 0);
  RunResult inside = RunInSandbox({"/bin/sh", "-c", "ls /proc/self/fd | tr '\\n' ' '; readlink /proc/self/fd/0"});
  ::close(leaked);
  EXPECT_EQ(inside.stdout_data, "0 1 2 3 /dev/null\n") << inside.stdout_data;  // 3: ls's own dir fd
}

}  // namespace
}  // namespace sbx::testing
