// Brings the small internet up and down, and reads what its servers logged.
#include "tests/net/small_internet.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "base/remove_tree.h"

namespace sbx::nettest {
namespace {

constexpr double kReadySeconds = 20;
constexpr double kCertSeconds = 60;
constexpr char kStateParent[] = "/var/tmp";
constexpr char kStatePrefix[] = "sbx-net-";  // then the creator's pid: see LeftByDeadProcess

Result<void> CopyFile(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return SysError(ErrorCode::kIo, "open(" + from + ")");
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out << in.rdbuf();
  out.close();
  if (!out) return SysError(ErrorCode::kIo, "write(" + to + ")");
  return Ok{};
}

Result<void> WriteJson(const std::string& path, const nlohmann::json& value) {
  std::ofstream out(path, std::ios::trunc);
  out << value.dump(2) << "\n";
  out.close();
  if (!out) return SysError(ErrorCode::kIo, "write(" + path + ")");
  return Ok{};
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

void ReapStaleSmallInternets() {
  ReapStaleTopologies();
  DIR* dir = ::opendir(kStateParent);
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (struct dirent* entry = ::readdir(dir)) {
    if (LeftByDeadProcess(entry->d_name, kStatePrefix)) stale.push_back(entry->d_name);
  }
  ::closedir(dir);
  for (const auto& name : stale) (void)RemoveTree(std::string(kStateParent) + "/" + name);
}

std::string NetTestSourceDir() { return SBX_NET_TEST_DIR; }

Result<std::unique_ptr<SmallInternet>> SmallInternet::Start() {
  ReapStaleSmallInternets();
  std::unique_ptr<SmallInternet> net(new SmallInternet());
  if (auto up = net->Bring(); !up) {
    Error error = up.error().Context("small internet");
    error.message += "\n" + net->ServerLogs();
    (void)net->Stop();
    return error;
  }
  return net;
}

Result<void> SmallInternet::Bring() {
  std::string templ =
      std::string(kStateParent) + "/" + kStatePrefix + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return SysError(ErrorCode::kIo, "mkdtemp(" + templ + ")");
  state_dir_ = templ;
  SBX_ASSIGN_OR_RETURN(auto topology, Topology::Create());
  topology_ = std::move(topology);

  std::string cert_dir = state_dir_ + "/certs";
  if (::mkdir(cert_dir.c_str(), 0700) != 0)
    return SysError(ErrorCode::kIo, "mkdir(" + cert_dir + ")");
  std::string names(kDnsName);
  nlohmann::json hosts = nlohmann::json::array(), zone = nlohmann::json::array();
  for (const auto& host : kInternetHosts) {
    zone.push_back({{"name", host.name}, {"addr", host.address}});
    if (!host.in_u) continue;
    hosts.push_back({{"name", host.name}, {"addr", host.address}});
    if (host.name != kRogueCaHost) names += "," + std::string(host.name);
  }
  for (const auto& host : kDnsOnlyHosts) {
    zone.push_back({{"name", host.name}, {"addr", host.address}, {"v4_only", true}});
  }
  SBX_ASSIGN_OR_RETURN(
      auto certs, RunBounded({kHostPython, NetTestSourceDir() + "/servers.py", "certs", "--dir",
                              cert_dir, "--names", names, "--rogue-names", kRogueCaHost},
                             kCertSeconds));
  if (certs.exit_code != 0)
    return MakeError(ErrorCode::kSetupFailed, "servers.py certs: " + certs.err);
  SBX_TRY(CopyFile(cert_dir + "/ca.pem", ca_file()));
  SBX_TRY(CopyFile(cert_dir + "/rogue-ca.pem", rogue_ca_file()));
  SBX_TRY(CopyFile(NetTestSourceDir() + "/probes.py", probes_script()));
  const std::string packages = state_dir_ + "/packages";
  if (::mkdir(packages.c_str(), 0700) != 0)
    return SysError(ErrorCode::kIo, "mkdir(" + packages + ")");
  auto wheel =
      RunBounded({kHostPython, NetTestSourceDir() + "/servers.py", "wheel", "--dir", packages}, 30);
  if (!wheel) return wheel.error();
  if (wheel->exit_code != 0 || ::access(test_wheel_file().c_str(), R_OK) != 0)
    return MakeError(ErrorCode::kSetupFailed, "servers.py wheel: " + wheel->err);

  const std::string pypi(AddressOf("pypi.test"));
  nlohmann::json sinks = nlohmann::json::array();
  for (int port : kUdpSinkPorts)
    sinks.push_back({{"name", "pypi.test"}, {"addr", pypi}, {"port", port}});
  sinks.push_back({{"name", "pypi.test"}, {"addr", pypi}, {"port", kUdpDnsSinkPort}});
  nlohmann::json internet = {
      {"events", state_dir_ + "/events.jsonl"},
      {"cert_dir", cert_dir},
      {"hosts", hosts},
      {"zone_hosts", zone},
      {"http_ports", {kHttpPort}},
      {"https_ports", {kHttpsPort}},
      {"banner_ports",
       {{std::to_string(kSshPort), "SSH-2.0-sbx-test"},
        {std::to_string(kPostgresPort), "pg-banner"},
        {std::to_string(kAltHttpsPort), "alt-banner"}}},
      {"udp_sinks", sinks},
      {"dns", {{"name", kDnsName}, {"addr", kDnsAddress}, {"dot_port", kDotPort}}},
      {"package_index", {{"server", kPackageIndexHost}, {"dir", packages}}},
  };
  nlohmann::json canary = {
      {"events", state_dir_ + "/events.jsonl"},
      {"cert_dir", cert_dir},
      {"hosts",
       {{{"name", kCanaryName}, {"addr", "127.0.0.1"}},
        {{"name", "self.test"}, {"addr", kVethAddressT}}}},
      {"http_ports", {kHttpPort}},
      {"https_ports", nlohmann::json::array()},
      {"banner_ports", {{std::to_string(kCanaryPort), "canary-banner"}}},
  };
  SBX_TRY(StartServer("internet", internet, true));
  SBX_TRY(StartServer("canary", canary, false));

  // Both servers create their ready file once every socket listens.
  for (int waited_ms = 0;; waited_ms += 20) {
    bool all_ready = true;
    for (const char* role : {"internet", "canary"}) {
      all_ready = all_ready && ::access((state_dir_ + "/" + role + ".ready").c_str(), F_OK) == 0;
    }
    if (all_ready) return Ok{};
    for (auto& server : servers_) {
      if (!server.Running()) return MakeError(ErrorCode::kSetupFailed, "a server exited at start");
    }
    if (waited_ms >= kReadySeconds * 1000)
      return MakeError(ErrorCode::kSetupFailed, "servers not listening after 20 s");
    ::usleep(20000);
  }
}

Result<void> SmallInternet::StartServer(const std::string& role, const nlohmann::json& config,
                                        bool in_u) {
  nlohmann::json full = config;
  full["ready"] = state_dir_ + "/" + role + ".ready";
  std::string config_path = state_dir_ + "/" + role + ".json";
  SBX_TRY(WriteJson(config_path, full));
  std::vector<std::string> argv = {kHostPython, NetTestSourceDir() + "/servers.py", role,
                                   "--config", config_path};
  auto server = ServerProcess::Start(in_u ? topology_->InU(argv) : topology_->InT(argv),
                                     state_dir_ + "/" + role + ".log");
  if (!server) return server.error().Context(role + " server");
  servers_.push_back(std::move(*server));
  return Ok{};
}

Result<void> SmallInternet::Stop() {
  for (auto& server : servers_) server.Stop();
  servers_.clear();
  Result<void> result = Ok{};
  if (topology_) {
    result = topology_->Destroy();
    topology_.reset();
  }
  if (!state_dir_.empty()) {
    if (auto removed = RemoveTree(state_dir_); !removed && result) result = removed.error();
    state_dir_.clear();
  }
  return result;
}

SmallInternet::~SmallInternet() { (void)Stop(); }

Result<std::string> SmallInternet::BlobSha256(size_t size) const {
  SBX_ASSIGN_OR_RETURN(auto run, RunBounded({kHostPython, NetTestSourceDir() + "/servers.py",
                                             "blob-sha256", "--size", std::to_string(size)},
                                            30));
  if (run.exit_code != 0) return MakeError(ErrorCode::kIo, "servers.py blob-sha256: " + run.err);
  return Trim(run.out);
}

Result<CommandResult> SmallInternet::RunControlProbe(const std::vector<std::string>& args,
                                                     double timeout_seconds) const {
  std::vector<std::string> argv = {kHostPython, probes_script()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunBounded(topology_->InT(argv), timeout_seconds);
}

size_t SmallInternet::EventMark() const {
  struct stat st;
  if (::stat((state_dir_ + "/events.jsonl").c_str(), &st) != 0) return 0;
  return static_cast<size_t>(st.st_size);
}

std::vector<nlohmann::json> SmallInternet::EventsSince(size_t mark) const {
  std::vector<nlohmann::json> events;
  std::ifstream in(state_dir_ + "/events.jsonl", std::ios::binary);
  in.seekg(static_cast<std::streamoff>(mark));
  std::string line;
  while (std::getline(in, line)) {
    auto event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!event.is_discarded()) events.push_back(std::move(event));
  }
  return events;
}

std::string SmallInternet::ServerLogs() const {
  std::string logs;
  for (const char* role : {"internet", "canary"}) {
    std::string text = ReadAll(state_dir_ + "/" + role + ".log");
    if (!text.empty()) logs += std::string(role) + " server: " + text;
  }
  return logs;
}

size_t CountEvents(const std::vector<nlohmann::json>& events, const EventFilter& filter) {
  auto field_is = [](const nlohmann::json& event, const char* key, const nlohmann::json& want) {
    auto it = event.find(key);
    return it != event.end() && *it == want;
  };
  size_t count = 0;
  for (const auto& event : events) {
    if (!filter.kind.empty() && !field_is(event, "kind", filter.kind)) continue;
    if (!filter.server.empty() && !field_is(event, "server", filter.server)) continue;
    if (filter.port != 0 && !field_is(event, "port", filter.port)) continue;
    if (!filter.qname.empty() && !field_is(event, "qname", filter.qname)) continue;
    if (!filter.path.empty() && !field_is(event, "path", filter.path)) continue;
    ++count;
  }
  return count;
}

}  // namespace sbx::nettest
