// Unit tests for the MITM path's per-request decision: authority checks, placeholder leaks,
// header replacement, and the path the audit log may show.
#include "src/netd/http_inject.h"

#include <gtest/gtest.h>

#include <boost/beast/http/message.hpp>

namespace sbx::netd {
namespace {

namespace http = boost::beast::http;

constexpr char kPlaceholderA[] = "sbx-ph-0123456789abcdef0123456789abcdef";
constexpr char kPlaceholderB[] = "sbx-ph-fedcba9876543210fedcba9876543210";

struct Fixture {
  std::vector<InjectRule> rules;
  std::vector<InjectSecret> secrets;
  Fixture() {
    rules.push_back(InjectRule{"openai", {"api.test"}, "Authorization", "Bearer {secret}", "", ""});
    rules.push_back(InjectRule{"other", {"other.test"}, "X-Api-Key", "{secret}", "", ""});
    secrets.push_back(InjectSecret{Secret("Bearer sk-real"), Secret(kPlaceholderA)});
    secrets.push_back(InjectSecret{Secret("k-other"), Secret(kPlaceholderB)});
  }
};

http::request_header<> Request(const std::string& target, const std::string& host) {
  http::request_header<> request;
  request.method(http::verb::post);
  request.target(target);
  request.version(11);
  if (!host.empty()) request.set(http::field::host, host);
  return request;
}

std::vector<std::string> Values(const http::request_header<>& request, const std::string& name) {
  std::vector<std::string> values;
  for (auto range = request.equal_range(name); range.first != range.second; ++range.first) {
    values.emplace_back(ToStd(range.first->value()));
  }
  return values;
}

TEST(DecideAndInject, ReplacesEveryClientFieldOfTheHeaderAndTouchesNothingElse) {
  Fixture f;
  auto request = Request("/v1/chat?x=1", "api.test");
  request.insert("authorization", std::string("Bearer ") + kPlaceholderA);
  request.insert("AUTHORIZATION", "second");
  request.insert("X-Api-Key", "mine");  // the other rule's header, not for this host
  request.insert("User-Agent", "probe");
  auto verdict = DecideAndInject(f.rules, f.secrets, "api.test", 443, request);
  ASSERT_TRUE(verdict.allowed) << verdict.reason;
  EXPECT_EQ(verdict.injected, std::vector<std::string>{"openai"});
  EXPECT_EQ(Values(request, "Authorization"), std::vector<std::string>{"Bearer sk-real"});
  EXPECT_EQ(Values(request, "X-Api-Key"), std::vector<std::string>{"mine"});
  EXPECT_EQ(Values(request, "User-Agent"), std::vector<std::string>{"probe"});
  EXPECT_EQ(ToStd(request.target()), "/v1/chat?x=1");
}

TEST(DecideAndInject, SetsTheHeaderWhenTheClientSentNone) {
  Fixture f;
  auto request = Request("/", "API.test.:443");
  auto verdict = DecideAndInject(f.rules, f.secrets, "api.test", 443, request);
  ASSERT_TRUE(verdict.allowed) << verdict.reason;
  EXPECT_EQ(Values(request, "authorization"), std::vector<std::string>{"Bearer sk-real"});
}

TEST(DecideAndInject, RefusesAnotherAuthority) {
  Fixture f;
  for (auto [target, host] : std::vector<std::pair<std::string, std::string>>{
           {"/", "evil.test"},
           {"/", "api.test:8443"},
           {"/", "api.test:"},
           {"/", ""},
           {"https://evil.test/x", "api.test"},
           {"https://api.test@evil.test/x", "api.test"},
           {"api.test:443", "api.test"},  // authority-form
           {"x", "api.test"}}) {
    auto request = Request(target, host);
    auto verdict = DecideAndInject(f.rules, f.secrets, "api.test", 443, request);
    EXPECT_FALSE(verdict.allowed) << target << " " << host;
    EXPECT_EQ(verdict.reason, "host_mismatch");
    EXPECT_NE(verdict.explanation.find("api.test"), std::string::npos);
    EXPECT_TRUE(Values(request, "Authorization").empty()) << "nothing injected on refusal";
  }
  auto two_hosts = Request("/", "api.test");
  two_hosts.insert(http::field::host, "api.test");
  EXPECT_EQ(DecideAndInject(f.rules, f.secrets, "api.test", 443, two_hosts).reason,
            "host_mismatch");
  auto absolute = Request("https://Api.Test:443/v1?q", "api.test");
  EXPECT_TRUE(DecideAndInject(f.rules, f.secrets, "api.test", 443, absolute).allowed);
}

TEST(DecideAndInject, RefusesAnotherRulesPlaceholderAnywhere) {
  Fixture f;
  auto in_field = Request("/", "api.test");
  in_field.insert("X-Api-Key", kPlaceholderB);
  auto verdict = DecideAndInject(f.rules, f.secrets, "api.test", 443, in_field);
  EXPECT_FALSE(verdict.allowed);
  EXPECT_EQ(verdict.reason, "placeholder_leak");
  EXPECT_EQ(verdict.rule, "inject[1]");
  EXPECT_EQ(verdict.explanation.find(kPlaceholderB), std::string::npos);
  auto in_target = Request(std::string("/?k=") + kPlaceholderB, "api.test");
  EXPECT_EQ(DecideAndInject(f.rules, f.secrets, "api.test", 443, in_target).reason,
            "placeholder_leak");
  auto in_name = Request("/", "api.test");
  in_name.insert(kPlaceholderB, "x");  // a placeholder is a valid field name too
  EXPECT_EQ(DecideAndInject(f.rules, f.secrets, "api.test", 443, in_name).reason,
            "placeholder_leak");
  // Its own rule's placeholder is what it replaces.
  auto own = Request("/", "api.test");
  own.insert("Authorization", kPlaceholderA);
  EXPECT_TRUE(DecideAndInject(f.rules, f.secrets, "api.test", 443, own).allowed);
}

TEST(DecideAndInject, RefusesTraceAndConnectWhichWouldEchoOrTunnel) {
  Fixture f;
  for (http::verb method : {http::verb::trace, http::verb::connect}) {
    auto request = Request("/", "api.test");
    request.method(method);
    auto verdict = DecideAndInject(f.rules, f.secrets, "api.test", 443, request);
    EXPECT_FALSE(verdict.allowed);
    EXPECT_EQ(verdict.reason, "http_rule");
    EXPECT_TRUE(Values(request, "Authorization").empty()) << "no secret set on a refused request";
  }
  auto get = Request("/", "api.test");
  get.method(http::verb::get);
  EXPECT_TRUE(DecideAndInject(f.rules, f.secrets, "api.test", 443, get).allowed);
}

TEST(FindPlaceholder, FindsAnyRulesPlaceholderInPlaintext) {
  Fixture f;
  EXPECT_EQ(FindPlaceholder(f.rules, f.secrets,
                            std::string("GET / HTTP/1.1\r\nAuthorization: Bearer ") +
                                kPlaceholderA + "\r\n\r\n"),
            0u);
  EXPECT_EQ(FindPlaceholder(f.rules, f.secrets, std::string("x") + kPlaceholderB), 1u);
  EXPECT_FALSE(FindPlaceholder(f.rules, f.secrets, "GET / HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(FindPlaceholder(f.rules, f.secrets, kPlaceholderA, "api.test"));
  std::vector<InjectSecret> no_placeholders;
  no_placeholders.push_back(InjectSecret{Secret("v"), Secret("")});
  EXPECT_FALSE(FindPlaceholder({f.rules[0]}, no_placeholders, "anything"));
}

TEST(PathWithoutQuery, DropsQueryAndFragment) {
  EXPECT_EQ(PathWithoutQuery("/v1/x?key=secret"), "/v1/x");
  EXPECT_EQ(PathWithoutQuery("/a#frag"), "/a");
  EXPECT_EQ(PathWithoutQuery("https://h.test/a/b?c"), "/a/b");
  EXPECT_EQ(PathWithoutQuery("https://h.test?c"), "/");
  EXPECT_EQ(PathWithoutQuery("http://h.test"), "/");
  EXPECT_EQ(PathWithoutQuery("*"), "*");
}

TEST(DecideAndInject, AmbiguousFramingIsRefusedAsHostMismatch) {
  Fixture f;
  const std::vector<std::vector<std::pair<std::string, std::string>>> cases = {
      {{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}},
      {{"Content-Length", "5"}, {"Content-Length", "6"}},
      {{"Content-Length", "5, 5"}},
      {{"Transfer-Encoding", "gzip, chunked"}},
      {{"Upgrade", "h2c"}, {"Connection", "Upgrade, HTTP2-Settings"}},
  };
  for (const auto& fields : cases) {
    auto request = Request("/v1/chat", "api.test");
    for (const auto& [name, value] : fields) request.insert(name, value);
    const auto verdict = DecideAndInject(f.rules, f.secrets, "api.test", 443, request);
    EXPECT_FALSE(verdict.allowed) << fields[0].first << ": " << fields[0].second;
    EXPECT_EQ(verdict.reason, "host_mismatch");
    EXPECT_EQ(Values(request, "Authorization"), std::vector<std::string>{});
  }
  // A websocket upgrade stays possible: this path sees the server's 101.
  auto request = Request("/ws", "api.test");
  request.insert("Upgrade", "websocket");
  request.insert("Connection", "Upgrade");
  EXPECT_TRUE(DecideAndInject(f.rules, f.secrets, "api.test", 443, request).allowed);
}

}  // namespace
}  // namespace sbx::netd
