// `sbx serve`: parses flags, opens the listeners, serves until SIGTERM or SIGINT, then drains:
// no new sessions, requests in progress finish, every session ends, the sockets are removed.
#include "src/cli/serve_command.h"

#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/small_file.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/host/host_probe.h"
#include "sandbox/image/image.h"
#include "sandbox/launch/outer_run.h"
#include "sandbox/launch/run_result.h"
#include "sandbox/launcher.h"
#include "sandbox/policy/policy.h"
#include "src/cli/policy_flags.h"
#include "src/executor/session_pool.h"
#include "src/server/api.h"
#include "src/server/http_server.h"
#include "src/server/listener.h"
#include "src/server/session_registry.h"
#include "src/server/workspace_files.h"

namespace sbx::cli {
namespace {

struct ServeFlags {
  std::vector<std::string> listen;
  std::string token_file;
  std::string policy_file;
  std::string policy_dir;
  std::string image;
  size_t max_sessions = 32;
  bool max_sessions_given = false;
  size_t pool = 2;
  double session_idle = 900;
  double request_timeout = 30;
  double keepalive = 15;
  std::string session_prefix;
  std::string session_driver;  // isolation "outer": the container's own driver
};

void PrintServeUsage() {
  std::fprintf(stderr,
               "usage: sbx serve [--listen unix:PATH | tcp:HOST:PORT]... [--token-file FILE]\n"
               "                 [--policy FILE] [--policy-dir DIR] [--image NAME|ID|DIR] [--max-sessions N]\n"
               "                 [--pool N] [--session-idle SECONDS] [--request-timeout SECONDS]\n"
               "                 [--keepalive SECONDS] [--session-prefix NAME] [--session-driver PATH]\n"
               "                 [policy flags: --memory, --timeout, ...]\n\n"
               "  Serves sandboxed sessions over HTTP (docs/server-api.md). Default listener: a Unix\n"
               "  socket, /run/sbx/sbx.sock as root, else $XDG_RUNTIME_DIR/sbx.sock, mode 0600.\n"
               "  TCP needs --token-file (a file of mode 0600 or stricter holding the token).\n"
               "  --policy is every session's ceiling; a request may only tighten it.\n"
               "  --pool N keeps N sessions warm (0: every session starts cold). SIGTERM drains.\n"
               "  --request-timeout: a client must send each part of a request within it (30).\n"
               "  --keepalive: a streamed execution silent this long sends a keepalive event (15).\n"
               "  --session-prefix: session ids start with NAME_ (this pod's name), so a router\n"
               "  can send each request to the server that holds its session. Default: the\n"
               "  environment's SBX_SESSION_PREFIX, if set.\n"
               "  --session-driver: with isolation outer, where the container holds sbx's session\n"
               "  driver (default /usr/lib/sbx/session_driver.py); only root may be able to change it.\n");
}

int Refuse(const std::string& message) {
  std::fprintf(stderr, "sbx serve: %s\n", message.c_str());
  return 125;
}

Result<std::string> ReadToken(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return SysError(ErrorCode::kInvalidInput, "--token-file " + path);
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", st.st_mode & 0777);
    return InvalidInput("--token-file " + path + ": group or others may read it (mode " + mode +
                        "); chmod 600 it");
  }
  auto text = ReadSmallFile(path, 4096);
  if (!text) return text.error().Context("--token-file");
  std::string token = *text;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.size() < 16 || token.find_first_of(" \t\r\n") != std::string::npos) {
    return InvalidInput("--token-file " + path + ": the token must be one line of at least 16 "
                        "characters without spaces (e.g. `openssl rand -hex 32`)");
  }
  return token;
}

Result<size_t> Count(const std::string& flag, const std::string& value, size_t min, size_t max) {
  size_t parsed = 0;
  size_t used = 0;
  try {
    parsed = std::stoul(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used != value.size() || value.empty() || parsed < min || parsed > max) {
    return InvalidInput(flag + ": \"" + value + "\" is not a whole number in " + std::to_string(min) +
                        ".." + std::to_string(max));
  }
  return parsed;
}

Result<double> Seconds(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  double seconds = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !(seconds >= 1 && seconds <= 7 * 86400)) {
    return InvalidInput(flag + ": \"" + value + "\" is not a number of seconds in 1..604800");
  }
  return seconds;
}

// What a session with `policy` gets on this host, learnt the honest way: one real sandbox
// (/bin/true) with that policy. A server that cannot start one refuses to start at all.
Result<nlohmann::json> EnforcementReport(const Policy& policy, const std::string& image) {
  RunSpec spec;
  Policy probe = policy;
  spec.argv = {"/bin/true"};
  if (policy.isolation == Isolation::kNamespaces) {
    probe.network = NetworkMode::kNone;  // the network is reported from the policy
    auto image_dir = ResolveImageDir(image);
    if (!image_dir) return image_dir.error();
    spec.image_dir = *image_dir;
  }
  SBX_ASSIGN_OR_RETURN(spec.policy, ValidPolicy::Check(std::move(probe)));
  SBX_ASSIGN_OR_RETURN(auto ran, RunSandboxed(spec));
  if (ran.status != RunStatus::kExited || ran.exit_code != 0) {
    return MakeError(ErrorCode::kSetupFailed, "a probe sandbox (/bin/true) with the server's policy "
                                              "failed: " + std::string(RunStatusName(ran.status)) +
                                              " " + ran.setup_error);
  }
  nlohmann::json mechanisms = nlohmann::json::object();
  for (const Enforcement& line : ran.enforcement) mechanisms[line.what] = line.mechanism;
  std::string cgroup = "rlimits";
  if (auto memory = mechanisms.find("memory"); memory != mechanisms.end()) {
    const std::string& mechanism = memory->get_ref<const std::string&>();
    if (mechanism == "cgroup_v2") cgroup = "v2";
    if (mechanism == "cgroup_v1") cgroup = "v1";
  }
  const bool seccomp = mechanisms.value("seccomp", "") == "seccomp_bpf";
  nlohmann::json probes = nlohmann::json::array();
  for (const FeatureProbe& probe : ProbeHost()) {
    probes.push_back({{"name", probe.name}, {"available", probe.available}, {"required", probe.required}});
  }
  return nlohmann::json{{"network", NetworkModeName(policy.network)},
                        {"cgroup", cgroup},
                        {"seccomp", seccomp},
                        {"degraded", ran.degraded},
                        {"mechanisms", mechanisms},
                        {"host", probes}};
}

}  // namespace

int RunServeCommand(int argc, char** argv) {
  ServeFlags flags;
  PolicyFlags overrides;
  // A pod learns its own name only from the environment (the downward API); the flag wins.
  if (const char* prefix = std::getenv("SBX_SESSION_PREFIX"); prefix != nullptr) {
    if (auto valid = server::ValidateSessionPrefix(prefix, "SBX_SESSION_PREFIX"); !valid)
      return Refuse(valid.error().message);
    flags.session_prefix = prefix;
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintServeUsage();
      return 0;
    }
    std::string value;
    if (arg.rfind("--", 0) != 0) return Refuse("unexpected argument \"" + arg + "\"; see sbx serve --help");
    if (!TakeFlagValue(argc, argv, i, arg, value)) return Refuse(arg + ": needs a value");
    if (arg == "--listen") {
      flags.listen.push_back(value);
    } else if (arg == "--token-file") {
      flags.token_file = value;
    } else if (arg == "--policy") {
      flags.policy_file = value;
    } else if (arg == "--policy-dir") {
      flags.policy_dir = value;
    } else if (arg == "--image") {
      flags.image = value;
    } else if (arg == "--session-driver") {
      flags.session_driver = value;
    } else if (arg == "--session-prefix") {
      if (auto valid = server::ValidateSessionPrefix(value, arg); !valid) return Refuse(valid.error().message);
      flags.session_prefix = value;
    } else if (arg == "--max-sessions" || arg == "--pool") {
      auto count = arg == "--pool" ? Count(arg, value, 0, 64) : Count(arg, value, 1, 4096);
      if (!count) return Refuse(count.error().message);
      (arg == "--pool" ? flags.pool : flags.max_sessions) = *count;
      flags.max_sessions_given = flags.max_sessions_given || arg == "--max-sessions";
    } else if (arg == "--session-idle" || arg == "--request-timeout" || arg == "--keepalive") {
      auto seconds = Seconds(arg, value);
      if (!seconds) return Refuse(seconds.error().message);
      (arg == "--session-idle" ? flags.session_idle
       : arg == "--keepalive"  ? flags.keepalive
                               : flags.request_timeout) = *seconds;
    } else {
      overrides.emplace_back(arg, value);
    }
  }
  auto resolved = ResolvePolicy(flags.policy_file, overrides);
  if (!resolved) return Refuse(resolved.error().ToString());
  Policy policy = resolved->get();

  server::HttpServerOptions http;
  http.read_timeout_seconds = flags.request_timeout;
  if (flags.listen.empty()) {
    auto path = server::DefaultSocketPath();
    if (!path) return Refuse(path.error().message);
    flags.listen.push_back("unix:" + *path);
  }
  bool tcp = false;
  for (const std::string& value : flags.listen) {
    auto address = server::ParseListenAddress(value);
    if (!address) return Refuse(address.error().message);
    tcp = tcp || address->kind == server::ListenAddress::Kind::kTcp;
    http.listen.push_back(*address);
  }
  if (!flags.token_file.empty()) {
    auto token = ReadToken(flags.token_file);
    if (!token) return Refuse(token.error().ToString());
    http.token = *token;
  }
  if (tcp && http.token.empty()) {
    return Refuse("--listen tcp:... needs --token-file: a TCP port is reachable by every user and "
                  "host that can route to it");
  }
  // Outer sessions run the container's own session driver: checked once here, so a server
  // that could not run one never starts.
  if (policy.isolation == Isolation::kOuter) {
    if (flags.session_driver.empty()) flags.session_driver = executor::kSessionDriverPath;
    if (auto driver = CheckOuterSessionDriver(flags.session_driver, "--session-driver"); !driver)
      return Refuse(driver.error().ToString());
    // Every outer session runs as the same uid 1000 with no pid namespace of its own, so the
    // sessions of one server can signal and trace each other: one at a time unless asked.
    if (!flags.max_sessions_given) {
      flags.max_sessions = 1;
    } else if (flags.max_sessions > 1) {
      std::fprintf(stderr, "sbx serve: warning: isolation \"outer\" with --max-sessions %zu: the "
                           "sessions share uid 1000 and can signal and trace each other; give each "
                           "tenant its own pod\n", flags.max_sessions);
    }
  } else if (!flags.session_driver.empty()) {
    return Refuse("--session-driver: only isolation \"outer\" reads the driver from the container; "
                  "a session's driver is in its image otherwise; drop --session-driver");
  }
  auto owner = server::SandboxFileOwner(policy.isolation);
  if (!owner) return Refuse(owner.error().ToString());
  // The server's image is resolved once (--image wins over the policy's): every session of
  // this server uses it unless its own policy names another variant.
  auto image_dir = ResolveRunImage(flags.image, "--image", policy);
  if (!image_dir) return Refuse(image_dir.error().ToString());
  flags.image = *image_dir;
  policy.image.clear();
  auto server_policy = ValidPolicy::Check(policy);
  if (!server_policy) return Refuse(server_policy.error().ToString());

  // Every thread inherits this mask; the main thread takes the signals with sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<executor::SessionPool> pool;
  if (flags.pool > 0 && policy.network == NetworkMode::kNone) {
    executor::PoolOptions pool_options;
    pool_options.policy = *server_policy;
    pool_options.image_dir = flags.image;
    pool_options.warm_sessions = flags.pool;
    pool_options.max_sessions = flags.max_sessions + flags.pool;  // the warm ones are alive too
    pool_options.session_idle_seconds = flags.session_idle;
    auto created = executor::SessionPool::Create(std::move(pool_options));
    if (!created) return Refuse("--pool: " + created.error().ToString() + " (--pool 0 starts every session cold)");
    pool = std::move(*created);
  }
  server::RegistryOptions registry_options;
  registry_options.policy = *server_policy;
  registry_options.image_dir = flags.image;
  registry_options.max_sessions = flags.max_sessions;
  registry_options.pool = pool.get();
  registry_options.keepalive_seconds = flags.keepalive;
  registry_options.session_prefix = flags.session_prefix;
  registry_options.outer_session_driver = flags.session_driver;
  auto sessions = std::make_unique<server::SessionRegistry>(registry_options);
  server::ApiOptions api_options;
  api_options.policy = *server_policy;
  api_options.policy_dir = flags.policy_dir;
  api_options.session_idle_seconds = flags.session_idle;
  auto enforcement = EnforcementReport(policy, flags.image);
  if (!enforcement) return Refuse("cannot run a sandbox here: " + enforcement.error().ToString());
  api_options.host = *enforcement;
  api_options.image_dir = flags.image;
  api_options.pool_size = pool ? flags.pool : 0;
  server::Api api(api_options, *sessions, pool.get(), *owner);
  auto http_server = server::HttpServer::Create(http, [&api](server::HttpRequest& request) {
    return api.Handle(request);
  });
  if (!http_server) return Refuse(http_server.error().ToString());
  (*http_server)->Start();
  for (const auto& address : http.listen) {
    std::string shown = address.ToString();
    if (address.kind == server::ListenAddress::Kind::kTcp && address.port == "0") {
      if (auto port = (*http_server)->tcp_port()) shown = "tcp:" + address.host + ":" + std::to_string(*port);
    }
    std::printf("sbx serve: listening on %s\n", shown.c_str());
  }
  std::printf("sbx serve: ready (at most %zu sessions, %zu warm)\n", flags.max_sessions,
              pool ? flags.pool : size_t{0});
  std::fflush(stdout);

  int received = 0;
  sigwait(&signals, &received);
  std::fprintf(stderr, "sbx serve: %s: draining\n", received == SIGTERM ? "SIGTERM" : "SIGINT");
  api.StartDraining();
  (*http_server)->Drain();
  sessions->EndAll();
  sessions.reset();
  pool.reset();
  std::fprintf(stderr, "sbx serve: stopped\n");
  return 0;
}

}  // namespace sbx::cli
