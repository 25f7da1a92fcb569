// The proxy variables of proxy_env and the check that the policy's env leaves them alone.
#include "netpolicy/network_proxy_env.h"

#include <algorithm>

#include "base/ascii.h"

namespace sbx {
namespace {

// Lower-case names; a variable matches in any case (curl reads both, Python prefers lower).
constexpr const char* kProxyVariables[] = {"http_proxy", "https_proxy", "no_proxy", "all_proxy",
                                           "ftp_proxy"};

}  // namespace

std::map<std::string, std::string> ProxyEnvironment() {
  const std::string url = "http://127.0.0.1:" + std::to_string(kProxyEnvPort);
  const std::string local = "localhost,127.0.0.1,::1";
  return {{"HTTP_PROXY", url}, {"HTTPS_PROXY", url}, {"http_proxy", url},
          {"https_proxy", url}, {"NO_PROXY", local},  {"no_proxy", local}};
}

Result<void> CheckProxyEnvConflicts(bool proxy_env, const std::map<std::string, std::string>& env) {
  if (!proxy_env) return Ok{};
  for (const auto& [name, value] : env) {
    if (IsProxyVariable(name)) {
      return InvalidInput("env." + name +
                          ": network.proxy_env sets the proxy variables itself (and never "
                          "ALL_PROXY or FTP_PROXY); remove " +
                          name + " or proxy_env");
    }
  }
  return Ok{};
}

bool IsProxyVariable(std::string_view name) {
  const std::string lower = AsciiLower(name);
  return std::find(std::begin(kProxyVariables), std::end(kProxyVariables), lower) !=
         std::end(kProxyVariables);
}

}  // namespace sbx
