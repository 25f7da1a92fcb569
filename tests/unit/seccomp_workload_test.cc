// Tests that the seccomp filter reaches every thread (TSYNC) and that real Python runs under it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "sandbox/seccomp/seccomp_filter.h"
#include "tests/unit/seccomp_probe.h"

namespace sbx {
namespace {

using testing::Filter;
using testing::TestProgram;

struct ThreadReport {
  int seccomp_mode = -1;  // the "Seccomp:" field of the thread's /proc status
  int thread_errno = 0;   // what clock_settime(bad pointer) gave inside the thread
};

int SeccompModeOf(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Seccomp:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// A thread started before the filter is installed must end up filtered too.
ThreadReport RunThreadProbe(Filter filter) {
  const SeccompProgram& program = TestProgram();
  int report_pipe[2];
  EXPECT_EQ(pipe2(report_pipe, O_CLOEXEC), 0);
  pid_t pid = fork();
  if (pid == 0) {
    std::atomic<pid_t> tid{0};
    std::atomic<bool> go{false};
    ThreadReport report;
    std::thread thread([&] {
      tid = gettid();
      while (!go) usleep(1000);
      errno = 0;
      syscall(SYS_clock_settime, CLOCK_REALTIME, 1L);
      report.thread_errno = errno;
    });
    while (tid == 0) usleep(1000);
    if (filter == Filter::kOn) {
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || InstallSeccompInChild(program) != 0) {
        _exit(2);
      }
    }
    report.seccomp_mode = SeccompModeOf(tid);
    go = true;
    thread.join();
    if (write(report_pipe[1], &report, sizeof(report)) != sizeof(report)) _exit(3);
    _exit(0);
  }
  close(report_pipe[1]);
  ThreadReport report;
  EXPECT_EQ(read(report_pipe[0], &report, sizeof(report)), ssize_t{sizeof(report)});
  close(report_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << std::hex << status;
  return report;
}

TEST(SeccompWorkload, FilterReachesThreadsStartedBeforeIt) {
  ThreadReport control = RunThreadProbe(Filter::kOff);
  EXPECT_EQ(control.seccomp_mode, 0);
  EXPECT_EQ(control.thread_errno, EFAULT);
  ThreadReport filtered = RunThreadProbe(Filter::kOn);
  EXPECT_EQ(filtered.seccomp_mode, 2);  // SECCOMP_MODE_FILTER
  EXPECT_EQ(filtered.thread_errno, EPERM);
}

constexpr char kPythonScript[] = R"py(
import math, multiprocessing, socket, subprocess, sys, threading
threads = [threading.Thread(target=math.factorial, args=(2000,)) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
out = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, check=True)
assert out.stdout.strip() == b"42", out
for method in ("fork", "spawn", "forkserver"):
    with multiprocessing.get_context(method).Pool(2) as pool:
        assert pool.map(abs, [-1, -2, -3]) == [1, 2, 3], method
socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()
socket.getaddrinfo("localhost", 80)
try:
    import numpy, pandas, matplotlib
except ImportError as e:
    print("skipping scientific stack:", e)
else:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    a = numpy.ones((300, 300))
    assert float((a @ a).sum()) == 300.0 ** 3
    assert int(pandas.DataFrame({"x": range(10)}).x.sum()) == 45
    plt.plot([1, 2, 3]); plt.savefig(sys.argv[1] + "/plot.png")
print("python-ok")
)py";

TEST(SeccompWorkload, PythonThreadsSubprocessMultiprocessingAndNumpyWork) {
  constexpr char kPython[] = "/usr/bin/python3";
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  const SeccompProgram& program = TestProgram();
  std::string dir_template = ::testing::TempDir() + "sbx-seccomp-python-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
  const std::string dir = dir_template;
  const std::string log_path = dir + "/python.log";
  const std::string mpl_env = "MPLCONFIGDIR=" + dir;
  pid_t pid = fork();
  if (pid == 0) {
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0) _exit(120);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || InstallSeccompInChild(program) != 0) {
      _exit(121);
    }
    const char* argv[] = {kPython, "-c", kPythonScript, dir.c_str(), nullptr};
    const char* envp[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", mpl_env.c_str(),
                          nullptr};
    execve(kPython, const_cast<char**>(argv), const_cast<char**>(envp));
    _exit(122);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream log(log_path);
  std::stringstream output;
  output << log.rdbuf();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status 0x" << std::hex << status << "\n"
      << output.str();
  EXPECT_NE(output.str().find("python-ok"), std::string::npos) << output.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sbx
