// The shared escape checks of session executors.
#include "session_checks.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "sandbox_fixture.h"
#include "tests/integration/test_policy.h"

namespace sbx::testing {
namespace {

executor::CodeResult Run(executor::CodeExecutor& executor, const std::string& language, const std::string& source) {
  auto result = executor.Execute({{language, source}});
  EXPECT_TRUE(result) << result.error().ToString();
  return result ? *result : executor::CodeResult{};
}

// errno names of mount(NULL target) and setns(-1), printed by the probe.
constexpr const char* kSyscallProbe =
    "import ctypes, errno\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.mount(None, None, None, 0, None)\n"
    "a = errno.errorcode[ctypes.get_errno()]\n"
    "libc.setns(-1, 0)\n"
    "print(a, errno.errorcode[ctypes.get_errno()])\n";

// Interface names from /proc/net/dev and from if_nameindex(3), each sorted: "lo | lo" alone.
constexpr const char* kInterfacesProbe =
    "import socket\n"
    "dev = sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:])\n"
    "index = sorted(n for _, n in socket.if_nameindex())\n"
    "print(' '.join(dev), '|', ' '.join(index))\n";

}  // namespace

void ExpectIsolatedWithoutHostSecrets(executor::CodeExecutor& executor) {
  ::setenv("SBX_TEST_SECRET_KEY", "sk-should-never-leak", 1);
  executor::CodeResult r =
      Run(executor, "bash",
          "hostname; id -u; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; "
          "grep NoNewPrivs /proc/self/status; env | grep -c SECRET; ls /root 2>&1 | head -1");
  EXPECT_NE(r.output.find("sandbox\n1000\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("CapPrm:\t0000000000000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("CapEff:\t0000000000000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("CapBnd:\t0000000000000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NoNewPrivs:\t1"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("sk-should-never-leak"), std::string::npos);
  EXPECT_NE(r.output.find("\n0\n"), std::string::npos) << r.output;  // no SECRET variable
  EXPECT_NE(r.output.find("Permission denied"), std::string::npos) << r.output;  // /root
  // Only lo, whatever the host's interfaces are named: the list is exactly lo, read both from
  // /proc/net/dev and from the kernel's interface index.
  executor::CodeResult net = Run(executor, "python", kInterfacesProbe);
  EXPECT_EQ(net.stdout_text, "lo | lo\n") << net.output;
  // The differential control: on the host, the same probes see the secret, host root and more
  // interfaces than lo.
  auto host = RunOnHost({"/bin/sh", "-c", "env | grep -c SECRET; id -u"});
  EXPECT_EQ(host.output, "1\n0\n");
  auto host_net = RunOnHost({"/usr/bin/python3", "-c", kInterfacesProbe});
  EXPECT_EQ(host_net.exit_code, 0) << host_net.output;
  EXPECT_NE(host_net.output.find("lo "), std::string::npos) << host_net.output;
  EXPECT_NE(host_net.output, "lo | lo\n") << "the host shows only lo: the check proves nothing";
  ::unsetenv("SBX_TEST_SECRET_KEY");
}

void ExpectSeccompFilterActive(executor::CodeExecutor& executor) {
  executor::CodeResult r = Run(executor, "python", kSyscallProbe);
  EXPECT_EQ(r.stdout_text, "EPERM EPERM\n") << r.output;
  auto host = RunOnHost({"/usr/bin/python3", "-c", kSyscallProbe});
  EXPECT_EQ(host.output, "EFAULT EBADF\n");
}

executor::ExecutorOptions TestExecutorOptions(double timeout_seconds) {
  executor::ExecutorOptions options;
  options.image_dir = TestImage();
  options.policy = Changed(options.policy,
                           [&](Policy& p) { p.limits.timeout_seconds = timeout_seconds * WallClockScale(); });
  options.grace_seconds = 1;
  return options;
}

std::unique_ptr<executor::SessionExecutor> NewSession(executor::ExecutorOptions options) {
  auto session = executor::SessionExecutor::Create(std::move(options));
  EXPECT_TRUE(session) << session.error().ToString();
  return session ? std::move(*session) : nullptr;
}

executor::CodeResult RunBlock(executor::CodeExecutor& executor, const std::string& language,
                              const std::string& source) {
  auto result = executor.Execute({{language, source}});
  EXPECT_TRUE(result) << result.error().ToString();
  return result ? *result : executor::CodeResult{};
}

executor::CodeResult Python(executor::CodeExecutor& executor, const std::string& source) {
  return RunBlock(executor, "python", source);
}

}  // namespace sbx::testing
