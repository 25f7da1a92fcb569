// The "small internet" the network tests run against: the topology (topology.h), a test CA
// with a leaf per host, the servers of tests/net/servers.py in U, a canary on T's loopback,
// and the event log through which tests count what reached them.
//
// Usage:
//   1. SBX_SKIP_WITHOUT_TOPOLOGY() (tests/integration/network_fixture.h): skip, or fail when
//      TopologyRequired(), if the topology cannot be built here;
//   2. auto net = SmallInternet::Start();        // everything up, servers listening
//   3. size_t mark = (*net)->EventMark();         // before the probe
//      ... run a probe with (*net)->topology().InT(...) ...
//      auto events = (*net)->EventsSince(mark);  // what the servers saw since the mark
//   4. (*net)->Stop() (the destructor calls it): servers killed by process group, namespaces,
//      /etc/netns/<T> and the state directory removed.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "tests/net/process.h"
#include "tests/net/topology.h"

namespace sbx::nettest {

// Ports every host in U serves (servers.py answers each with the host's name). Every HTTP(S)
// server also answers GET/POST /echo with {"method", "path", "headers": [sorted names]}:
// header names only, so a secret never travels back to the client.
inline constexpr int kHttpPort = 80;
inline constexpr int kHttpsPort = 443;
inline constexpr int kSshPort = 22;         // banner "SSH-2.0-sbx-test <name>"
inline constexpr int kPostgresPort = 5432;  // banner "pg-banner <name>"
inline constexpr int kAltHttpsPort = 8443;  // banner "alt-banner <name>"
inline constexpr int kDotPort = 853;        // DNS over TLS on kDnsAddress
inline constexpr int kUdpSinkPorts[] = {443,
                                        123};  // on pypi.test: answers "udp-sink <name>:<port>"
// A sink on pypi.test's port 53 too: the sandbox's stub owns port 53 of every address, and a
// datagram that got past it would reach this sink and be counted.
inline constexpr int kUdpDnsSinkPort = 53;
// The canary on T's own loopback: HTTP on 127.0.0.1:80 (loop.test) and a banner here.
inline constexpr int kCanaryPort = 47123;
inline constexpr char kCanaryName[] = "canary";

// The package index (tests/net/pypi_index.py): PEP 503 pages under /simple/ on this host's
// HTTP(S) servers, linking kTestWheel (package sbx_test_pkg, VALUE = 42) under /packages/,
// and download counts of twelve projects at /top-pypi-packages-30-days.min.json.
inline constexpr char kPackageIndexHost[] = "pypi.test";
inline constexpr char kTestWheel[] = "sbx_test_pkg-1.0-py3-none-any.whl";

// The host whose HTTPS certificate the rogue CA signs (rogue_ca_file), not the test CA: a
// client that trusts only ca_file() must fail to verify it.
inline constexpr char kRogueCaHost[] = "untrusted.test";

// The host python3 that runs the servers and the unsandboxed controls.
inline constexpr char kHostPython[] = "/usr/bin/python3";

class SmallInternet {
 public:
  static Result<std::unique_ptr<SmallInternet>> Start();
  ~SmallInternet();
  SmallInternet(const SmallInternet&) = delete;
  SmallInternet& operator=(const SmallInternet&) = delete;

  // Stops the servers, deletes the topology and the state directory. Idempotent.
  Result<void> Stop();

  const Topology& topology() const { return *topology_; }
  // A directory private to this instance (0700): certs, the servers' config, logs, events.
  const std::string& state_dir() const { return state_dir_; }
  // The test CA and a copy of probes.py next to it (the probe's default cafile).
  std::string ca_file() const { return state_dir_ + "/ca.pem"; }
  std::string probes_script() const { return state_dir_ + "/probes.py"; }
  // The wheel the package index serves (built at Start with Python's zipfile).
  std::string test_wheel_file() const { return state_dir_ + "/packages/" + kTestWheel; }
  // The second CA, which signs only kRogueCaHost's certificate and is not in ca_file().
  std::string rogue_ca_file() const { return state_dir_ + "/rogue-ca.pem"; }
  // The sha256 (hex) of what GET /blob/<size> returns on every HTTP(S) server.
  Result<std::string> BlobSha256(size_t size) const;

  // Runs probes.py with `args` unsandboxed in T with the host python3: the control.
  Result<CommandResult> RunControlProbe(const std::vector<std::string>& args,
                                        double timeout_seconds = 60) const;

  // The size of the event log now; pass it to EventsSince.
  size_t EventMark() const;
  // Events the servers logged after `mark`, one JSON object each: kind ("conn", "request",
  // "datagram", "dns"), server (host name), addr, port, and per kind proto, method, path, host,
  // sni, qname, qtype. A "request" also carries the values of the Authorization and X-Api-Key
  // headers it arrived with ("authorization", "x_api_key"; null when absent), so tests can
  // tell what a secret-injecting proxy sent upstream.
  std::vector<nlohmann::json> EventsSince(size_t mark) const;
  // The servers' own output (for failure messages).
  std::string ServerLogs() const;

 private:
  SmallInternet() = default;
  Result<void> Bring();
  Result<void> StartServer(const std::string& role, const nlohmann::json& config, bool in_u);

  std::unique_ptr<Topology> topology_;
  std::string state_dir_;
  std::vector<ServerProcess> servers_;
};

// Removes what test processes that no longer exist left behind (killed before their
// teardown): namespaces, /etc/netns entries, state directories. Start() calls it.
void ReapStaleSmallInternets();

// How many events match: every non-empty field must be equal; port 0 matches any port.
struct EventFilter {
  std::string kind{};
  std::string server{};
  int port = 0;
  std::string qname{};
  std::string path{};  // a request's path, query included
};
size_t CountEvents(const std::vector<nlohmann::json>& events, const EventFilter& filter);

// Where tests/net lives in the source tree (servers.py, probes.py).
std::string NetTestSourceDir();

}  // namespace sbx::nettest
