// The opt-in `"proxy_env": true` of an allowlist (policies/SCHEMA.md): an HTTP proxy on the
// sandbox's loopback for tools that insist on a proxy variable, served by sbx-netd with the
// same decisions as captured connections (src/netd/proxy_request.h).
//
// The sandbox child binds the proxy's listener on 127.0.0.1:kProxyEnvPort next to the capture
// sockets (network_capture.h) and hands it over the same way; the program's environment gets
// the variables below. ALL_PROXY and any SOCKS URL are never set: a SOCKS variable makes
// httpx (so the OpenAI SDK) fail unless an extra package is installed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/error.h"

namespace sbx {

// Squid's port, the one most tools' documentation shows. Not a capture port (policy load
// refuses allow rules naming it when proxy_env is on: a wildcard capture listener on it
// would collide with the proxy's).
inline constexpr uint16_t kProxyEnvPort = 3128;

// HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy = http://127.0.0.1:3128 and
// NO_PROXY, no_proxy = localhost,127.0.0.1,::1.
std::map<std::string, std::string> ProxyEnvironment();

// With proxy_env on, the policy's env (and --env) may not name any proxy variable, in either
// case: those above, ALL_PROXY and FTP_PROXY (one would silently redirect or break what
// proxy_env sets). An error naming the variable; Ok when proxy_env is off.
Result<void> CheckProxyEnvConflicts(bool proxy_env, const std::map<std::string, std::string>& env);

// One of the names above, ALL_PROXY or FTP_PROXY, in any case.
bool IsProxyVariable(std::string_view name);

}  // namespace sbx
