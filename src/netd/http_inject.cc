// Checks a MITM'd request's authority and placeholders, then sets the inject rules' headers.
#include "src/netd/http_inject.h"

#include <algorithm>

#include "base/ascii.h"
#include "src/netd/http_request_stream.h"

namespace sbx::netd {
namespace {

namespace http = boost::beast::http;

// "http://authority/..." or "https://authority/...": the scheme's length, else 0.
size_t AbsoluteFormScheme(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (StartsWithIgnoreAsciiCase(target, scheme)) return scheme.size();
  }
  return 0;
}

// `authority` (host[:port], no userinfo) names `name` on `port`.
bool AuthorityIs(std::string_view authority, std::string_view name, uint16_t port) {
  std::string_view host = authority;
  if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    const std::string_view digits = authority.substr(colon + 1);
    if (digits != std::to_string(port)) return false;
  }
  auto normalized = NormalizeHostName(host);
  return normalized && *normalized == name;
}

bool RuleCovers(const InjectRule& rule, std::string_view name) {
  return std::find(rule.hosts.begin(), rule.hosts.end(), name) != rule.hosts.end();
}

RequestVerdict Refusal(std::string reason, std::string rule, std::string explanation) {
  RequestVerdict verdict;
  verdict.reason = std::move(reason);
  verdict.rule = std::move(rule);
  verdict.explanation = std::move(explanation);
  return verdict;
}

bool AuthorityMatches(const http::request_header<>& request, std::string_view name,
                      uint16_t port) {
  const std::string_view target = ToStd(request.target());
  if (request.count(http::field::host) != 1) return false;
  const auto host = request[http::field::host];
  if (!AuthorityIs(ToStd(host), name, port)) return false;
  if (const size_t scheme = AbsoluteFormScheme(target); scheme > 0) {
    const std::string_view rest = target.substr(scheme);
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
    return authority.find('@') == std::string_view::npos && AuthorityIs(authority, name, port);
  }
  // Otherwise only origin-form ("/...") and asterisk-form ("*"); CONNECT's authority-form has
  // no business inside a TLS connection to one host.
  return target.starts_with('/') || (target == "*" && request.method() == http::verb::options);
}

}  // namespace

std::optional<size_t> FindPlaceholder(const std::vector<InjectRule>& rules,
                                      const std::vector<InjectSecret>& secrets,
                                      std::string_view bytes, std::string_view covered_name) {
  for (size_t i = 0; i < rules.size() && i < secrets.size(); ++i) {
    const std::string_view placeholder = secrets[i].placeholder.view();
    if (placeholder.empty() || RuleCovers(rules[i], covered_name)) continue;
    if (bytes.find(placeholder) != std::string_view::npos) return i;
  }
  return std::nullopt;
}

RequestVerdict DecideAndInject(const std::vector<InjectRule>& rules,
                               const std::vector<InjectSecret>& secrets, std::string_view name,
                               uint16_t port, http::request_header<>& request) {
  if (!AuthorityMatches(request, name, port)) {
    return Refusal("host_mismatch", "",
                   "the request's Host or target authority is not " + std::string(name) +
                       ", the name this connection was allowed for");
  }
  // Beast reads a list Content-Length ("5, 5") or a Transfer-Encoding ending in chunked, and
  // forwards the fields as sent: the server could frame the body differently and read part of
  // it as a next request whose Host nobody checked.
  std::vector<HttpField> fields;
  for (const auto& field : request) {
    fields.push_back({ToStd(field.name_string()), ToStd(field.value())});
  }
  const FramingCheck framing = CheckRequestFraming(request.version() == 10, fields, true);
  if (!framing.problem.empty()) {
    return Refusal("host_mismatch", "",
                   "the request's framing is ambiguous (" + framing.problem +
                       "): a server could read part of it as another request");
  }
  // TRACE makes the server echo the request, the secret it was given included; CONNECT would
  // tunnel past the header this rule sets.
  if (request.method() == http::verb::trace || request.method() == http::verb::connect) {
    return Refusal("http_rule", "",
                   std::string(ToStd(request.method_string())) +
                       " is refused on a host sbx injects a secret for (it would echo or tunnel "
                       "the request)");
  }
  const std::string_view target = ToStd(request.target());
  std::optional<size_t> leaked = FindPlaceholder(rules, secrets, target, name);
  for (auto field = request.begin(); !leaked && field != request.end(); ++field) {
    leaked = FindPlaceholder(rules, secrets, ToStd(field->value()), name);
    if (!leaked) leaked = FindPlaceholder(rules, secrets, ToStd(field->name_string()), name);
  }
  if (leaked) {
    return Refusal("placeholder_leak", "inject[" + std::to_string(*leaked) + "]",
                   "the request carries the placeholder of inject rule \"" +
                       rules[*leaked].name + "\", which is not for " + std::string(name));
  }
  RequestVerdict verdict;
  verdict.allowed = true;
  for (size_t i = 0; i < rules.size() && i < secrets.size(); ++i) {
    if (!RuleCovers(rules[i], name)) continue;
    request.erase(rules[i].header);  // every field of that name, case-insensitively
    const std::string_view value = secrets[i].value.view();
    request.set(rules[i].header, boost::beast::string_view(value.data(), value.size()));
    verdict.injected.push_back(rules[i].name);
  }
  return verdict;
}

std::string PathWithoutQuery(std::string_view target) {
  if (const size_t scheme = AbsoluteFormScheme(target); scheme > 0) {
    const size_t slash = target.find_first_of("/?#", scheme);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    if (target.starts_with('?') || target.starts_with('#')) return "/";
  }
  return std::string(target.substr(0, target.find_first_of("?#")));
}

}  // namespace sbx::netd
