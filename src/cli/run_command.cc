// `sbx run`: parses flags on top of the policy, runs the sandbox, maps the result to an exit code.
#include "src/cli/run_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "base/units.h"
#include "sandbox/image/image.h"
#include "sandbox/launcher.h"
#include "src/cli/policy_flags.h"
#include "src/cli/terminal_input.h"

namespace sbx::cli {
namespace {

constexpr int kSbxFailed = 125;

// Ctrl-C, a terminal's hang-up and SIGTERM (a CI job cancelled, `timeout`, `kill`) end the run
// as its timeout would: the whole tree killed, the run's cgroups removed, then sbx exits.
// Left to their default action they would kill sbx alone and leave its cgroups behind.
// Blocked here, before any thread or child exists, so that none of them takes the signal; the
// returned descriptor becomes readable when one arrives (-1 if it cannot be set up: the
// default actions stay).
UniqueFd TakeStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  UniqueFd fd(::signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK));
  if (fd && ::sigprocmask(SIG_BLOCK, &stop, nullptr) != 0) fd.reset();
  return fd;
}

// The signal that cancelled the run, 0 if none came.
int ReceivedStopSignal(int stop_fd) {
  signalfd_siginfo info{};
  if (stop_fd < 0 || ::read(stop_fd, &info, sizeof(info)) != sizeof(info)) return 0;
  return static_cast<int>(info.ssi_signo);
}

struct RunFlags {
  std::string policy_file;
  std::string image;
  std::string workspace;
  std::string stdin_path;
  std::string cgroup = "auto";
  std::string network_log;  // allowlist runs: where the audit log goes
  bool json = false;
};

int Refuse(bool json, const std::string& message) {
  if (json) {
    RunResult result;
    result.status = RunStatus::kSetupFailed;
    result.setup_error = message;
    std::printf("%s\n", RunResultToJson(result).c_str());
  }
  std::fprintf(stderr, "sbx: %s\n", message.c_str());
  return kSbxFailed;
}

}  // namespace

void PrintRunUsage() {
  std::fprintf(stderr,
               "usage: sbx run [--policy FILE] [--workspace DIR] [--image NAME|ID|DIR] [--timeout SECONDS]\n"
               "               [--memory SIZE] [--pids N] [--cpus N] [--network none|host|allowlist]\n"
               "               [--allow HOST[:PORTS]]... [--network-log FILE] [--env KEY=VALUE]...\n"
               "               [--allow-degraded cgroup|seccomp]... [--cgroup auto|v2|v1|none]\n"
               "               [--isolation namespaces|outer] [--stdin FILE|-] [--json] -- COMMAND [ARG...]\n"
               "--stdin FILE|-: the program's stdin (default /dev/null). A terminal reaches it through\n"
               "  a pipe, never as the terminal itself.\n"
               "--isolation outer: only where the container runtime isolates (gVisor, Kata): no\n"
               "  namespaces or image; the program runs on the container's root file system and network\n"
               "  (needs --network host) as uid 1000, with the limits, seccomp and the workspace. Needs\n"
               "  sbx as root. Never chosen automatically; see docs/containers.md.\n"
               "--network none (the default): a network namespace with only lo. host: the host's\n"
               "  network. allowlist: only what --allow and the policy's network.allow name, enforced\n"
               "  by sbx-netd outside the sandbox, its DNS queries and connections in an audit log\n"
               "  (--network-log FILE).\n"
               "--allow HOST[:PORTS] adds an allow rule and implies --network allowlist. HOST is a name\n"
               "  (pypi.org), *.suffix (*.example.com), an IPv4 address or CIDR, or [IPv6] / [IPv6/len];\n"
               "  PORTS is 443 (the default), a list (22,443), a range (8000-8100) or * (every port).\n"
               "  See policies/SCHEMA.md.\n");
}

int RunRunCommand(int argc, char** argv) {
  RunFlags flags;
  PolicyFlags overrides;
  std::vector<std::string> command;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--json") {
      flags.json = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      PrintRunUsage();
      return 0;
    }
    if (arg.rfind("--", 0) != 0) break;  // the command starts here
    std::string value;
    if (!TakeFlagValue(argc, argv, i, arg, value)) return Refuse(flags.json, arg + ": needs a value");
    if (arg == "--policy") flags.policy_file = value;
    else if (arg == "--image") flags.image = value;
    else if (arg == "--workspace") flags.workspace = value;
    else if (arg == "--stdin") flags.stdin_path = value;
    else if (arg == "--cgroup") flags.cgroup = value;
    else if (arg == "--network-log") flags.network_log = value;
    else overrides.emplace_back(arg, value);
  }
  for (; i < argc; ++i) command.emplace_back(argv[i]);
  if (command.empty()) return Refuse(flags.json, "no command given; usage: sbx run [FLAGS] -- COMMAND [ARG...]");

  if (flags.cgroup != "auto" && flags.cgroup != "v2" && flags.cgroup != "v1" && flags.cgroup != "none")
    return Refuse(flags.json, "--cgroup: use auto, v2, v1 or none, not \"" + flags.cgroup + "\"");
  RunSpec spec;
  spec.cgroup_options.try_v2 = flags.cgroup == "auto" || flags.cgroup == "v2";
  spec.cgroup_options.try_v1 = flags.cgroup == "auto" || flags.cgroup == "v1";
  auto policy = ResolvePolicy(flags.policy_file, overrides);
  if (!policy) return Refuse(flags.json, policy.error().ToString());
  spec.policy = std::move(*policy);
  if (spec.policy->network == NetworkMode::kHost)
    std::fprintf(stderr, "sbx: warning: --network host: the sandbox shares this host's network\n");

  auto image_dir = ResolveRunImage(flags.image, "--image", spec.policy.get());
  if (!image_dir) return Refuse(flags.json, image_dir.error().ToString());
  spec.image_dir = *image_dir;
  spec.workspace_dir = flags.workspace;
  if (!flags.network_log.empty() && spec.policy->network != NetworkMode::kAllowlist)
    return Refuse(flags.json, "--network-log: only an allowlist run keeps a network log (add --allow HOST or --network allowlist)");
  spec.network_log_path = flags.network_log;
  spec.argv = command;
  spec.pass_through_output = !flags.json;
  UniqueFd stdin_file;
  if (flags.stdin_path == "-" && ::isatty(0)) {
    auto relayed = InputFromTerminal(0);
    if (!relayed) return Refuse(flags.json, relayed.error().ToString());
    stdin_file = std::move(relayed).value();
    spec.stdin_fd = stdin_file.get();
  } else if (flags.stdin_path == "-") {
    spec.stdin_fd = 0;
  } else if (!flags.stdin_path.empty()) {
    stdin_file.reset(::open(flags.stdin_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!stdin_file) return Refuse(flags.json, "--stdin " + flags.stdin_path + ": " + std::strerror(errno));
    spec.stdin_fd = stdin_file.get();
  }
  // A closed or broken stdout must not kill sbx before it cleans up.
  ::signal(SIGPIPE, SIG_IGN);
  UniqueFd stop_signals = TakeStopSignals();
  spec.cancel_fd = stop_signals.get();

  auto result = RunSandboxed(spec);
  if (!result) return Refuse(flags.json, result.error().ToString());
  // A shell's convention: 128 + the signal that stopped the run (130 for Ctrl-C).
  if (result->status == RunStatus::kCancelled) result->signal = ReceivedStopSignal(stop_signals.get());
  if (flags.json) {
    std::printf("%s\n", RunResultToJson(*result).c_str());
  } else if (result->status == RunStatus::kSetupFailed) {
    std::fprintf(stderr, "sbx: %s\n", result->setup_error.c_str());
  } else if (result->exec_failure_code != 0) {
    std::fprintf(stderr, "sbx: %s\n", result->exec_error.c_str());  // the program never ran
  } else if (result->status != RunStatus::kExited) {
    std::fprintf(stderr, "sbx: %s\n", RunStatusName(result->status));
  }
  if (!flags.json && !result->network.log_path.empty()) {
    std::fprintf(stderr, "sbx: network: %llu allowed, %llu denied; log %s\n",
                 static_cast<unsigned long long>(result->network.allowed),
                 static_cast<unsigned long long>(result->network.denied), result->network.log_path.c_str());
  }
  std::fflush(stdout);
  return ExitCodeFor(*result);
}

}  // namespace sbx::cli
