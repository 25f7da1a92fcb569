// Creates and deletes the test namespaces T and U with ip(8).
#include "tests/net/topology.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <random>

#include "base/remove_tree.h"
#include "tests/net/process.h"
#include "tests/support/env_flag.h"

namespace sbx::nettest {
namespace {

constexpr char kNetnsRun[] = "/run/netns";
constexpr char kEtcNetns[] = "/etc/netns";
constexpr char kVethT[] = "veth0";
constexpr char kVethU[] = "veth1";
constexpr char kVeth6T[] = "2001:db8:ffff::1";
constexpr char kVeth6U[] = "2001:db8:ffff::2";
constexpr double kIpTimeoutSeconds = 10;

Result<void> Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kIp};
  argv.insert(argv.end(), args.begin(), args.end());
  SBX_ASSIGN_OR_RETURN(auto run, RunBounded(argv, kIpTimeoutSeconds));
  if (run.exit_code != 0 || run.timed_out) {
    std::string command = "ip";
    for (const auto& arg : args) command += " " + arg;
    return MakeError(ErrorCode::kSetupFailed,
                     command + ": " + (run.timed_out ? "timed out" : run.err));
  }
  return Ok{};
}

std::string RandomHex() {
  std::random_device random;
  char text[16];
  std::snprintf(text, sizeof(text), "%06x", random() & 0xffffff);
  return text;
}

bool IsV6(std::string_view address) { return address.find(':') != std::string_view::npos; }

void RemoveEtcNetnsIfEmpty() { ::rmdir(kEtcNetns); }  // ENOTEMPTY and ENOENT are fine

std::string HostsFile() {
  std::string text = "127.0.0.1 localhost\n::1 localhost\n";
  for (const auto& host : kInternetHosts) {
    if (host.in_hosts_file) text += std::string(host.address) + " " + std::string(host.name) + "\n";
  }
  return text;
}

Result<void> WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return SysError(ErrorCode::kIo, "write(" + path + ")");
  return Ok{};
}

}  // namespace

bool LeftByDeadProcess(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  size_t end = name.find('-');
  if (end == std::string_view::npos || end == 0 || end > 9) return false;
  pid_t pid = 0;
  for (char c : name.substr(0, end)) {
    if (c < '0' || c > '9') return false;
    pid = pid * 10 + (c - '0');
  }
  // A zombie still counts as alive: its parent may yet clean up.
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

std::string_view AddressOf(std::string_view name) {
  for (const auto& host : kInternetHosts) {
    if (host.name == name) return host.address;
  }
  return name == kDnsName ? kDnsAddress : std::string_view();
}

std::string TopologyUnavailableReason() {
  static const std::string reason = [] {
    if (::geteuid() != 0) return std::string("needs root: `ip netns add` and veth pairs");
    if (::access(kIp, X_OK) != 0) return std::string("no ip(8) at ") + kIp;
    std::string probe = "sbxt-" + std::to_string(::getpid()) + "-probe";
    if (auto added = Ip({"netns", "add", probe}); !added)
      return "ip netns unavailable: " + added.error().message;
    std::string why;
    if (auto veth = Ip({"-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"});
        !veth)
      why = "no veth support: " + veth.error().message;
    (void)Ip({"netns", "del", probe});
    return why;
  }();
  return reason;
}

bool TopologyRequired() { return sbx::testing::EnvFlag("SBX_REQUIRE_NET_TOPOLOGY"); }

void ReapStaleTopologies() {
  DIR* dir = ::opendir(kNetnsRun);
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (LeftByDeadProcess(name, "sbxt-") || LeftByDeadProcess(name, "sbxu-")) stale.push_back(name);
  }
  ::closedir(dir);
  for (const auto& name : stale) {
    (void)Ip({"netns", "del", name});
    (void)RemoveTree(std::string(kEtcNetns) + "/" + name);
  }
  if (!stale.empty()) RemoveEtcNetnsIfEmpty();
}

Result<std::unique_ptr<Topology>> Topology::Create() {
  std::string suffix = std::to_string(::getpid()) + "-" + RandomHex();
  std::unique_ptr<Topology> topology(new Topology("sbxt-" + suffix, "sbxu-" + suffix));
  if (auto built = topology->Build(); !built) {
    (void)topology->Destroy();
    return built.error().Context("small internet topology");
  }
  return topology;
}

Result<void> Topology::Build() {
  SBX_TRY(Ip({"netns", "add", t_}));
  t_created_ = true;
  SBX_TRY(Ip({"netns", "add", u_}));
  u_created_ = true;
  SBX_TRY(Ip({"-n", t_, "link", "set", "lo", "up"}));
  SBX_TRY(Ip({"-n", u_, "link", "set", "lo", "up"}));
  SBX_TRY(
      Ip({"-n", t_, "link", "add", kVethT, "type", "veth", "peer", "name", kVethU, "netns", u_}));
  SBX_TRY(Ip({"-n", t_, "addr", "add", std::string(kVethAddressT) + "/24", "dev", kVethT}));
  SBX_TRY(Ip({"-n", u_, "addr", "add", std::string(kVethAddressU) + "/24", "dev", kVethU}));
  // nodad: no tentative period, so v6 works the moment the links are up.
  SBX_TRY(
      Ip({"-n", t_, "-6", "addr", "add", std::string(kVeth6T) + "/64", "dev", kVethT, "nodad"}));
  SBX_TRY(
      Ip({"-n", u_, "-6", "addr", "add", std::string(kVeth6U) + "/64", "dev", kVethU, "nodad"}));
  SBX_TRY(Ip({"-n", t_, "link", "set", kVethT, "up"}));
  SBX_TRY(Ip({"-n", u_, "link", "set", kVethU, "up"}));

  std::vector<std::string_view> u_addresses = {kDnsAddress};
  for (const auto& host : kInternetHosts) {
    if (host.in_u) u_addresses.push_back(host.address);
  }
  for (std::string_view address : u_addresses) {
    std::string a(address);
    if (IsV6(address)) {
      SBX_TRY(Ip({"-n", u_, "-6", "addr", "add", a + "/128", "dev", "lo", "nodad"}));
      SBX_TRY(Ip({"-n", t_, "-6", "route", "add", a + "/128", "via", kVeth6U}));
    } else {
      SBX_TRY(Ip({"-n", u_, "addr", "add", a + "/32", "dev", "lo"}));
      SBX_TRY(Ip({"-n", t_, "route", "add", a + "/32", "via", std::string(kVethAddressU)}));
    }
  }

  // Another test process may remove /etc/netns, empty for an instant, between the two mkdirs
  // (RemoveEtcNetnsIfEmpty): then both are made again.
  std::string etc = std::string(kEtcNetns) + "/" + t_;
  for (int attempt = 0;; ++attempt) {
    if (::mkdir(kEtcNetns, 0755) != 0 && errno != EEXIST)
      return SysError(ErrorCode::kIo, std::string("mkdir(") + kEtcNetns + ")");
    if (::mkdir(etc.c_str(), 0755) == 0) break;
    if (errno != ENOENT || attempt == 10) return SysError(ErrorCode::kIo, "mkdir(" + etc + ")");
  }
  etc_created_ = true;
  SBX_TRY(WriteFile(etc + "/hosts", HostsFile()));
  SBX_TRY(WriteFile(ResolvConfPath(), DefaultResolvConf()));
  return Ok{};
}

std::string Topology::ResolvConfPath() const {
  return std::string(kEtcNetns) + "/" + t_ + "/resolv.conf";
}

std::string Topology::DefaultResolvConf() {
  return "nameserver " + std::string(kDnsAddress) + "\noptions timeout:2 attempts:1\n";
}

Result<void> Topology::Destroy() {
  Result<void> first = Ok{};
  auto note = [&first](Result<void> step) {
    if (!step && first) first = step.error();
  };
  // Deleting a namespace deletes the veth end in it, and with it the pair.
  if (u_created_) note(Ip({"netns", "del", u_}));
  u_created_ = false;
  if (t_created_) note(Ip({"netns", "del", t_}));
  t_created_ = false;
  if (etc_created_) {
    note(RemoveTree(std::string(kEtcNetns) + "/" + t_));
    RemoveEtcNetnsIfEmpty();
  }
  etc_created_ = false;
  return first;
}

Topology::~Topology() { (void)Destroy(); }

std::vector<std::string> Topology::InT(const std::vector<std::string>& argv) const {
  std::vector<std::string> full = {kIp, "netns", "exec", t_};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

std::vector<std::string> Topology::InU(const std::vector<std::string>& argv) const {
  std::vector<std::string> full = {kIp, "netns", "exec", u_};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

}  // namespace sbx::nettest
