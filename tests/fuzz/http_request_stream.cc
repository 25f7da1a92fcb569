// Fuzzes sbx-netd's check of every request on a plain-HTTP connection
// (src/netd/http_request_stream.h) with what the sandbox sends on one: request after request,
// bodies and chunks, fed as netd's reads deliver it.
//
// Invariants beyond "no crash":
//   - fed in uneven reads (each its own heap block, so ASan sees a read past one) the stream
//     gets the verdict, the bytes let through and the request count it gets fed at once; what
//     was let through only grows, and after a refusal Feed says false and adds nothing;
//   - what goes upstream is the input's prefix less the Expect lines of heads, and when nothing
//     was refused, what is held back is at most one head's worth;
//   - read again by a strict reader written here from the header's rules (not the product's),
//     what goes upstream is whole heads of at most kMaxHttpHead bytes, one per request counted,
//     each with one Host naming the first one's name and no other port, no Expect, Upgrade,
//     HTTP2-Settings or CONNECT, unambiguous framing, no body on a method that takes none, and
//     chunks as framed; so no request hides inside a body the server reads differently;
//   - what goes upstream, checked again, passes whole and unchanged.
#include "src/netd/http_request_stream.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/ascii.h"
#include "netpolicy/network_rules.h"
#include "src/netd/http_head.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/read_sizes.h"

namespace {

using sbx::EqualsIgnoreAsciiCase;
using sbx::netd::HttpRequestStream;
using sbx::netd::kMaxHttpHead;

constexpr uint16_t kPort = 80;
constexpr uint64_t kMaxBodyLength = (uint64_t{1} << 31) - 1;

struct Fed {
  bool ok = true;
  std::string out;
  std::string problem;
  size_t requests = 0;
};

Fed Result(const HttpRequestStream& stream, bool ok, const std::vector<uint8_t>& out) {
  return {ok, std::string(out.begin(), out.end()), stream.problem(), stream.requests()};
}

Fed FeedAtOnce(std::string_view bytes) {
  HttpRequestStream stream(kPort);
  std::vector<uint8_t> out;
  const std::vector<uint8_t> read(bytes.begin(), bytes.end());
  const bool ok = stream.Feed(read, out);
  return Result(stream, ok, out);
}

Fed FeedInReads(std::string_view bytes) {
  HttpRequestStream stream(kPort);
  std::vector<uint8_t> out;
  sbx::netd::fuzz::ReadSizes sizes(bytes.size());
  bool ok = true;
  for (size_t at = 0; at < bytes.size();) {
    const size_t take = std::min(sizes.Next(), bytes.size() - at);
    const std::vector<uint8_t> read(bytes.begin() + at, bytes.begin() + at + take);
    const size_t out_before = out.size();
    const size_t requests_before = stream.requests();
    const bool was_ok = ok;
    ok = stream.Feed(read, out);
    SBX_FUZZ_CHECK(stream.requests() >= requests_before);
    if (!was_ok) SBX_FUZZ_CHECK(!ok && out.size() == out_before);
    at += take;
  }
  return Result(stream, ok, out);
}

// Returns how many bytes of `in` went upstream as `out`: only whole Expect field lines, each
// starting a line, may be missing from the copy.
size_t MatchUpstream(std::string_view in, std::string_view out) {
  size_t i = 0;
  size_t o = 0;
  while (o < out.size()) {
    SBX_FUZZ_CHECK(i < in.size());
    if (i > 0 && in[i - 1] == '\n') {
      const size_t end = in.find("\r\n", i);
      const std::string_view line = in.substr(i, end == in.npos ? in.npos : end + 2 - i);
      // Passed on (a body's bytes, a trailer) it is in `out`, as far as `out` goes.
      const std::string_view copy = out.substr(o, line.size());
      if (sbx::StartsWithIgnoreAsciiCase(line, "expect:") && end != in.npos &&
          !line.starts_with(copy)) {
        i = end + 2;
        continue;
      }
    }
    SBX_FUZZ_CHECK(in[i] == out[o]);
    ++i;
    ++o;
  }
  return i;
}

bool IsTokenChar(char c) {
  return c > 0x20 && c < 0x7f &&
         std::string_view("\"(),/:;<=>?@[\\]{}").find(c) == std::string_view::npos;
}

// The strict field line the header promises: a token, ':', a value without controls but HTAB.
bool IsStrictFieldLine(std::string_view line, std::string_view& name, std::string_view& value) {
  const size_t colon = line.find(':');
  if (colon == 0 || colon == line.npos) return false;
  name = line.substr(0, colon);
  if (!std::all_of(name.begin(), name.end(), IsTokenChar)) return false;
  value = line.substr(colon + 1);
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return true;
}

bool IsDecimal(std::string_view text, size_t max_digits) {
  return !text.empty() && text.size() <= max_digits && (text.size() == 1 || text[0] != '0') &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct Framing {
  bool chunked = false;
  uint64_t length = 0;
};

// One head as it went upstream; `name` is the first head's Host, set by the first.
Framing CheckHead(std::string_view head, bool first, std::string& name) {
  SBX_FUZZ_CHECK(head.size() <= kMaxHttpHead && head.ends_with("\r\n\r\n"));
  std::string_view method;
  bool http10 = false;
  size_t hosts = 0;
  size_t lengths = 0;
  size_t encodings = 0;
  Framing framing;
  for (size_t at = 0; at + 2 < head.size();) {
    const size_t end = head.find("\r\n", at);
    const std::string_view line = head.substr(at, end - at);
    SBX_FUZZ_CHECK(line.find_first_of(std::string_view("\r\n\0", 3)) == line.npos);
    if (at == 0) {
      const size_t space = line.find(' ');
      SBX_FUZZ_CHECK(space != line.npos && space > 0);
      method = line.substr(0, space);
      SBX_FUZZ_CHECK(line.ends_with(" HTTP/1.1") || line.ends_with(" HTTP/1.0"));
      http10 = line.ends_with(" HTTP/1.0");
      SBX_FUZZ_CHECK(method != "CONNECT");
    } else {
      std::string_view field;
      std::string_view value;
      SBX_FUZZ_CHECK(IsStrictFieldLine(line, field, value));
      SBX_FUZZ_CHECK(!EqualsIgnoreAsciiCase(field, "expect"));
      SBX_FUZZ_CHECK(!EqualsIgnoreAsciiCase(field, "upgrade"));
      SBX_FUZZ_CHECK(!EqualsIgnoreAsciiCase(field, "http2-settings"));
      if (EqualsIgnoreAsciiCase(field, "host")) {
        ++hosts;
        const auto authority = sbx::netd::SplitAuthority(value);
        SBX_FUZZ_CHECK(authority && authority->port.value_or(kPort) == kPort);
        const auto normalized = sbx::NormalizeHostName(authority->host);
        const std::string host = normalized ? *normalized : sbx::AsciiLower(authority->host);
        if (first) name = host;
        SBX_FUZZ_CHECK(host == name);
      } else if (EqualsIgnoreAsciiCase(field, "content-length")) {
        ++lengths;
        SBX_FUZZ_CHECK(IsDecimal(value, 10));
        framing.length = std::stoull(std::string(value));
        SBX_FUZZ_CHECK(framing.length <= kMaxBodyLength);
      } else if (EqualsIgnoreAsciiCase(field, "transfer-encoding")) {
        ++encodings;
        SBX_FUZZ_CHECK(EqualsIgnoreAsciiCase(value, "chunked") && !http10);
        framing.chunked = true;
      }
    }
    at = end + 2;
  }
  SBX_FUZZ_CHECK(hosts == 1 && lengths <= 1 && encodings <= 1 && lengths + encodings <= 1);
  if (framing.chunked || framing.length > 0) {
    for (std::string_view none : {"GET", "HEAD", "OPTIONS", "DELETE", "TRACE"}) {
      SBX_FUZZ_CHECK(method != none);
    }
  }
  return framing;
}

// A chunked body from `at` as it went upstream; returns where it ends (or the end of `up`).
size_t SkipChunks(std::string_view up, size_t at) {
  while (at < up.size()) {
    const size_t end = up.find("\r\n", at);
    SBX_FUZZ_CHECK(end != up.npos);  // lines go upstream whole
    const std::string_view size_line = up.substr(at, end - at);
    SBX_FUZZ_CHECK(!size_line.empty() && size_line.size() <= 8);
    SBX_FUZZ_CHECK(size_line.size() == 1 || size_line[0] != '0');
    uint64_t size = 0;
    for (char c : size_line) {
      const size_t digit = std::string_view("0123456789abcdef").find(sbx::AsciiLower(c));
      SBX_FUZZ_CHECK(digit != std::string_view::npos);
      size = size * 16 + digit;
    }
    SBX_FUZZ_CHECK(size <= kMaxBodyLength);
    at = end + 2;
    if (size == 0) {
      while (at < up.size()) {
        const size_t line_end = up.find("\r\n", at);
        SBX_FUZZ_CHECK(line_end != up.npos);
        const std::string_view trailer = up.substr(at, line_end - at);
        at = line_end + 2;
        if (trailer.empty()) return at;
        std::string_view field;
        std::string_view value;
        SBX_FUZZ_CHECK(IsStrictFieldLine(trailer, field, value));
      }
      return at;
    }
    at += static_cast<size_t>(std::min<uint64_t>(size, up.size() - at));
    if (at == up.size()) return at;
    SBX_FUZZ_CHECK(up.substr(at, 2) == "\r\n");
    at += 2;
  }
  return at;
}

// Reads what went upstream as a strict server would; returns the number of heads.
size_t ReadUpstream(std::string_view up) {
  std::string name;
  size_t heads = 0;
  for (size_t at = 0; at < up.size();) {
    const size_t end = up.find("\r\n\r\n", at);
    SBX_FUZZ_CHECK(end != up.npos);  // heads go upstream whole
    const Framing framing = CheckHead(up.substr(at, end + 4 - at), heads == 0, name);
    ++heads;
    at = end + 4;
    if (framing.chunked) {
      at = SkipChunks(up, at);
    } else {
      at += static_cast<size_t>(std::min<uint64_t>(framing.length, up.size() - at));
    }
  }
  return heads;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const Fed whole = FeedAtOnce(in);
  const Fed reads = FeedInReads(in);
  SBX_FUZZ_CHECK(whole.ok == whole.problem.empty() && reads.ok == reads.problem.empty());
  SBX_FUZZ_CHECK(reads.ok == whole.ok && reads.out == whole.out);
  SBX_FUZZ_CHECK(reads.requests == whole.requests);

  const size_t passed = MatchUpstream(in, whole.out);
  if (whole.ok) SBX_FUZZ_CHECK(size - passed <= kMaxHttpHead);
  SBX_FUZZ_CHECK(ReadUpstream(whole.out) == whole.requests);

  const Fed again = FeedAtOnce(whole.out);
  SBX_FUZZ_CHECK(again.ok && again.out == whole.out && again.requests == whole.requests);
  return 0;
}
