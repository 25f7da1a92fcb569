// The namespaces of the "small internet": T plays the host sbx and sbx-netd run on, U plays
// the internet, joined by a veth pair. Nothing here touches the real host's network config.
//
//   T (sbxt-<pid>-<hex>)                          U (sbxu-<pid>-<hex>)
//   lo 127.0.0.1 (canary)                         lo: every address of kInternetHosts + DNS
//   veth0 192.0.2.1/24, 2001:db8:ffff::1/64  <->  veth1 192.0.2.2/24, 2001:db8:ffff::2/64
//   one /32 (/128) route per U address via veth1
//   /etc/netns/<T>/hosts, resolv.conf (`ip netns exec` bind-mounts them over /etc)
//
// Usage: 1. TopologyUnavailableReason() == "" or skip (fail instead if TopologyRequired());
// 2. Topology::Create(); 3. run things with InT()/InU() argv prefixes; 4. Destroy() (the
// destructor calls it too).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::nettest {

struct InternetHost {
  std::string_view name;
  std::string_view address;
  bool in_hosts_file;  // listed in T's /etc/hosts; otherwise only the test DNS server knows it
  bool in_u;           // an address of U with servers on it (loop.test is T's own loopback)
};

// The hosts of the small internet. The servers on each answer with the host's name.
// clang-format off
inline constexpr InternetHost kInternetHosts[] = {
    {"pypi.test",      "203.0.113.10",    true,  true},
    {"api.test",       "203.0.113.11",    true,  true},
    {"evil.test",      "203.0.113.12",    true,  true},
    {"cdn.test",       "203.0.113.13",    true,  true},
    {"rebind.test",    "203.0.113.14",    false, true},   // DNS alternates it with 10.0.0.5
    {"untrusted.test", "203.0.113.15",    true,  true},   // HTTPS cert from the rogue CA
    {"internal.test",  "10.0.0.5",        true,  true},
    {"meta.test",      "169.254.169.254", true,  true},
    {"loop.test",      "127.0.0.1",       true,  false},  // T's own loopback: the canary
    {"v6.test",        "2001:db8::10",    false, true},
    {"nat64.test",     "64:ff9b::a00:5",  false, true},   // 10.0.0.5 behind a NAT64 prefix
};
// clang-format on
// Names only the test DNS server knows, beside kInternetHosts. With `search corp.test` in a
// resolv.conf, a lookup of "apex.test" or "ghost.test" that applies the search list finds the
// *.corp.test names, which point at evil.test. self.test is T's own veth address, where the
// canary also serves HTTP (a service of the host on a public-looking address).
inline constexpr std::string_view kSearchDomain = "corp.test";
// clang-format off
inline constexpr InternetHost kDnsOnlyHosts[] = {
    {"apex.test",            "203.0.113.13", false, false},  // cdn.test's address
    {"apex.test.corp.test",  "203.0.113.12", false, false},  // evil.test's address
    {"ghost.test.corp.test", "203.0.113.12", false, false},
    {"self.test",            "192.0.2.1",    false, false},  // kVethAddressT
};
// clang-format on
inline constexpr std::string_view kDnsName = "dns.test";
inline constexpr std::string_view kDnsAddress = "203.0.113.53";  // T's resolv.conf points here
inline constexpr std::string_view kVethAddressT = "192.0.2.1";
inline constexpr std::string_view kVethAddressU = "192.0.2.2";

// The address of a host in kInternetHosts by name ("" when unknown).
std::string_view AddressOf(std::string_view name);

// Why topology tests cannot run on this machine, or "" when they can: not root, no `ip`,
// `ip netns add` refused, or no veth support. Probes with a throwaway namespace.
std::string TopologyUnavailableReason();

// True when SBX_REQUIRE_NET_TOPOLOGY=1: the caller (tools/test.sh on machines that can build the
// small internet) wants an unavailable topology to fail the tests instead of skipping them.
bool TopologyRequired();

// Deletes the namespaces and /etc/netns entries of earlier test processes that no longer
// exist (a test killed before its teardown). Names carry the creator's pid for this.
void ReapStaleTopologies();
// True when `name` is "<prefix><pid>-..." and no process `pid` exists any more.
bool LeftByDeadProcess(std::string_view name, std::string_view prefix);

class Topology {
 public:
  static Result<std::unique_ptr<Topology>> Create();
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  // Deletes both namespaces and /etc/netns/<T>. Idempotent; reports the first failure.
  Result<void> Destroy();

  const std::string& t() const { return t_; }
  // The resolv.conf that processes run with InT() see (a file of this topology's own, bound
  // over /etc/resolv.conf in their mount namespace); tests may rewrite it.
  std::string ResolvConfPath() const;
  static std::string DefaultResolvConf();
  const std::string& u() const { return u_; }
  // argv run in T or U: {"/usr/sbin/ip", "netns", "exec", <ns>, argv...}.
  std::vector<std::string> InT(const std::vector<std::string>& argv) const;
  std::vector<std::string> InU(const std::vector<std::string>& argv) const;

 private:
  Topology(std::string t, std::string u) : t_(std::move(t)), u_(std::move(u)) {}
  Result<void> Build();

  std::string t_, u_;
  bool t_created_ = false, u_created_ = false, etc_created_ = false;
};

// The ip(8) binary the harness uses.
inline constexpr char kIp[] = "/usr/sbin/ip";

}  // namespace sbx::nettest
