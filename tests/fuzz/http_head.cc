// Fuzzes sbx-netd's HTTP head reader (src/netd/http_head.h), its authority splitter, and
// FirstBytesReader's HTTP path with a connection's first bytes.
//
// Invariants beyond "no crash":
//   - a Host answer is a non-empty host of [A-Za-z0-9-._~:] from a head that holds exactly
//     one Host field, no NUL and only CRLF line ends;
//   - kNeedMore only for fewer than kMaxHttpHead bytes without an empty line;
//   - read incrementally the bytes get the one-shot reader's verdict, never a Host the one-shot
//     reader would not give, and bytes after a verdict do not change it;
//   - SplitAuthority's host is the authority's own prefix (bracketed or not), its port <= 65535.
#include "src/netd/http_head.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/ascii.h"
#include "src/netd/first_bytes.h"
#include "tests/fuzz/first_bytes_feed.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using sbx::netd::HttpHeadResult;
using sbx::netd::HttpHeadStatus;

bool IsAnswerHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == ':';
}

void CheckHostHead(std::string_view bytes, const std::string& host) {
  SBX_FUZZ_CHECK(!host.empty());
  for (char c : host) SBX_FUZZ_CHECK(IsAnswerHostChar(c));
  const size_t end = bytes.find("\r\n\r\n");
  SBX_FUZZ_CHECK(end != std::string_view::npos);
  const std::string_view head = bytes.substr(0, end + 2);
  size_t hosts = 0;
  for (size_t at = 0; at < head.size();) {
    const size_t lf = head.find('\n', at);
    SBX_FUZZ_CHECK(lf != std::string_view::npos && lf > at && head[lf - 1] == '\r');
    const std::string_view line = head.substr(at, lf - at - 1);
    SBX_FUZZ_CHECK(line.find('\0') == std::string_view::npos);
    SBX_FUZZ_CHECK(line.find('\r') == std::string_view::npos);
    if (at > 0 && sbx::StartsWithIgnoreAsciiCase(line, "host:")) ++hosts;
    at = lf + 1;
  }
  SBX_FUZZ_CHECK(hosts == 1);
}

void CheckSplitAuthority(std::string_view text) {
  const auto split = sbx::netd::SplitAuthority(text);
  if (!split) return;
  SBX_FUZZ_CHECK(!split->host.empty());
  const std::string bracketed = "[" + std::string(split->host) + "]";
  SBX_FUZZ_CHECK(text.starts_with(split->bracketed ? bracketed : std::string(split->host)));
  if (!split->bracketed) SBX_FUZZ_CHECK(split->host.find(':') == std::string_view::npos);
  for (char c : split->host) SBX_FUZZ_CHECK(IsAnswerHostChar(c));
  const size_t host_end = split->bracketed ? bracketed.size() : split->host.size();
  SBX_FUZZ_CHECK(split->port.has_value() == (text.size() > host_end));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size <= 300) CheckSplitAuthority(text);
  const HttpHeadResult whole = sbx::netd::ReadHttpHost(text);
  if (whole.status == HttpHeadStatus::kHost) CheckHostHead(text, whole.host);
  if (whole.status != HttpHeadStatus::kHost) SBX_FUZZ_CHECK(whole.host.empty());
  if (whole.status == HttpHeadStatus::kNeedMore) {
    SBX_FUZZ_CHECK(size < sbx::netd::kMaxHttpHead);
    SBX_FUZZ_CHECK(text.find("\r\n\r\n") == std::string_view::npos);
  }
  if (size == 0 || data[0] == 22) return 0;  // a TLS record: tls_client_hello's

  const auto fed = sbx::netd::fuzz::FeedInChunks(std::span<const uint8_t>(data, size));
  const HttpHeadResult at_verdict = sbx::netd::ReadHttpHost(text.substr(0, fed.consumed));
  if (fed.peek) {
    using sbx::netd::PeekKind;
    SBX_FUZZ_CHECK(at_verdict.status != HttpHeadStatus::kNeedMore);
    SBX_FUZZ_CHECK((fed.peek->kind == PeekKind::kHttpHost) ==
                   (at_verdict.status == HttpHeadStatus::kHost));
    SBX_FUZZ_CHECK(fed.peek->name == at_verdict.host);
    SBX_FUZZ_CHECK(whole.status == at_verdict.status && whole.host == at_verdict.host);
  } else {
    // Still reading: a line may be incomplete, but no Host answer may have been missed.
    SBX_FUZZ_CHECK(at_verdict.status != HttpHeadStatus::kHost);
  }
  return 0;
}
