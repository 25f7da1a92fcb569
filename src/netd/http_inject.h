// The per-request decision of the MITM path, as pure functions of the inject rules, their secrets,
// the connection's name and port and the request's header (docs/network.md, TLS termination):
//   1. the request's authority (Host, and an absolute-form target's authority when there is
//      one) must be the connection's name, case-insensitive, with no port or the connection's
//      port; anything else is refused host_mismatch (fronting inside TLS), and so is a
//      request whose framing is ambiguous (http_request_stream.h's CheckRequestFraming, with a
//      websocket-style Upgrade allowed: this path sees the 101), since a server could read
//      part of it as another request;
//   2. a placeholder of an inject rule that does not cover this name, anywhere in the target
//      or a field value, is refused placeholder_leak (the sandbox sending a key's stand-in to
//      a host it was not meant for);
//   3. for every rule that covers the name: every field named like the rule's header is
//      removed and the header is set to the secret's value. Nothing else changes.
// Also used before any TLS: FindPlaceholder on a plain-HTTP head (port 80), where any
// placeholder is a leak, since secrets are never injected into plaintext.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/message.hpp>

#include "netpolicy/network_rules.h"
#include "src/netd/tls_config.h"

namespace sbx::netd {

struct RequestVerdict {
  bool allowed = false;
  std::string reason;                 // refused: "host_mismatch" or "placeholder_leak"
  std::string rule;                   // placeholder_leak: "inject[i]", the leaked rule
  std::string explanation;            // refused: the 403 page's text (no secret, no value)
  std::vector<std::string> injected;  // allowed: the names of the rules applied, in order
};

// `rules[i]`'s secret is `secrets[i]`. `name` is the connection's (normalized) name. On
// refusal the header is left as it came.
RequestVerdict DecideAndInject(const std::vector<InjectRule>& rules,
                               const std::vector<InjectSecret>& secrets, std::string_view name,
                               uint16_t port, boost::beast::http::request_header<>& request);

// The index of the first rule whose non-empty placeholder occurs in `bytes` and whose hosts
// do not include `covered_name` ("" : no rule is covered).
std::optional<size_t> FindPlaceholder(const std::vector<InjectRule>& rules,
                                      const std::vector<InjectSecret>& secrets,
                                      std::string_view bytes, std::string_view covered_name = "");

inline std::string_view ToStd(boost::beast::string_view text) { return {text.data(), text.size()}; }

// An origin-form or absolute-form target's path without the query string or fragment (what the
// audit log may show): "/v1/x?key=1" -> "/v1/x", "https://h/a?b" -> "/a", "*" -> "*".
std::string PathWithoutQuery(std::string_view target);

}  // namespace sbx::netd
