// Parses the sandbox's side of a plain-HTTP connection request by request and passes only
// requests whose Host and framing are checked.
#include "src/netd/http_request_stream.h"

#include <algorithm>

#include "base/ascii.h"
#include "netpolicy/network_rules.h"

namespace sbx::netd {
namespace {

// A body length or chunk size at most 2^31 - 1, without leading zeros: a server that keeps
// lengths in 32 bits, or skips leading zeros differently, would end the body elsewhere and
// read the rest as a request this stream passed as body. "7fffffff\r\n" is the longest line.
constexpr uint64_t kMaxBodyLength = (uint64_t{1} << 31) - 1;
constexpr size_t kMaxChunkSizeLine = 8 + 2;
constexpr size_t kMaxContentLengthDigits = 10;

bool MethodTakesNoBody(std::string_view method) {
  for (std::string_view none : {"GET", "HEAD", "OPTIONS", "DELETE", "TRACE"}) {
    if (method == none) return true;
  }
  return false;
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

uint64_t HexValue(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint64_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<uint64_t>(c - 'a' + 10);
  return static_cast<uint64_t>(c - 'A' + 10);
}

bool HasToken(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (EqualsIgnoreAsciiCase(item, token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// A Host as names are compared: NormalizeHostName, else (an address) lower case.
std::string ComparableHost(std::string_view host) {
  if (auto name = NormalizeHostName(host)) return *name;
  return AsciiLower(host);
}

void Append(std::vector<uint8_t>& out, std::string_view bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}

// `head` without its Expect fields (the head is strict: CRLF lines, no obs-fold).
void AppendWithoutExpect(std::vector<uint8_t>& out, std::string_view head) {
  size_t at = 0;
  while (at < head.size()) {
    const size_t end = head.find("\r\n", at) + 2;
    const std::string_view line = head.substr(at, end - at);
    const size_t colon = line.find(':');
    const bool expect = at > 0 && colon != std::string_view::npos &&
                        EqualsIgnoreAsciiCase(line.substr(0, colon), "expect");
    if (!expect) Append(out, line);
    at = end;
  }
}

}  // namespace

FramingCheck CheckRequestFraming(bool http10, const std::vector<HttpField>& fields,
                                 bool allow_upgrade) {
  FramingCheck check;
  bool content_length = false;
  bool transfer_encoding = false;
  auto refuse = [&check](std::string problem) {
    check.problem = std::move(problem);
    return check;
  };
  for (const HttpField& field : fields) {
    if (field.value.find_first_of("\r\n") != std::string_view::npos) {
      return refuse("a line break inside a field value");
    }
    if (EqualsIgnoreAsciiCase(field.name, "content-length")) {
      if (content_length) return refuse("more than one Content-Length");
      content_length = true;
      const std::string_view digits = field.value;
      if (digits.empty() || digits.size() > kMaxContentLengthDigits ||
          (digits.size() > 1 && digits.front() == '0') ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return refuse("a Content-Length that is not one decimal number without leading zeros");
      }
      for (char c : digits) check.length = check.length * 10 + static_cast<uint64_t>(c - '0');
      if (check.length > kMaxBodyLength) return refuse("a Content-Length over 2^31 - 1");
    } else if (EqualsIgnoreAsciiCase(field.name, "transfer-encoding")) {
      if (transfer_encoding) return refuse("more than one Transfer-Encoding");
      transfer_encoding = true;
      if (!EqualsIgnoreAsciiCase(field.value, "chunked")) {
        return refuse("a Transfer-Encoding other than exactly chunked");
      }
    } else if (EqualsIgnoreAsciiCase(field.name, "upgrade")) {
      if (!allow_upgrade) return refuse("an Upgrade on plain HTTP");
      if (HasToken(field.value, "h2c")) return refuse("an Upgrade to h2c");
    } else if (EqualsIgnoreAsciiCase(field.name, "http2-settings")) {
      return refuse("an HTTP2-Settings field (an h2c upgrade)");
    }
  }
  if (transfer_encoding && http10) return refuse("Transfer-Encoding on HTTP/1.0");
  if (transfer_encoding && content_length) {
    return refuse("both Content-Length and Transfer-Encoding");
  }
  if (transfer_encoding) {
    check.framing = BodyFraming::kChunked;
  } else if (content_length && check.length > 0) {
    check.framing = BodyFraming::kLength;
  }
  return check;
}

bool HttpRequestStream::Feed(std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  size_t at = 0;
  while (problem_.empty() && at < in.size()) {
    switch (state_) {
      case State::kHead:
        if (!FeedHead(in, at, out)) return false;
        break;
      case State::kBody:
      case State::kChunkData: {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(left_, in.size() - at));
        out.insert(out.end(), in.begin() + static_cast<ptrdiff_t>(at),
                   in.begin() + static_cast<ptrdiff_t>(at + take));
        at += take;
        left_ -= take;
        if (left_ == 0) state_ = state_ == State::kBody ? State::kHead : State::kChunkEnd;
        break;
      }
      case State::kChunkSize:
      case State::kChunkEnd:
      case State::kTrailer:
        if (!FeedLine(in, at, out)) return false;
        break;
    }
  }
  return problem_.empty();
}

bool HttpRequestStream::FeedHead(std::span<const uint8_t> in, size_t& at,
                                 std::vector<uint8_t>& out) {
  const size_t before = pending_.size();
  const size_t take = std::min(in.size() - at, kMaxHttpHead - before);
  pending_.append(reinterpret_cast<const char*>(in.data()) + at, take);
  const size_t end = pending_.find("\r\n\r\n", before < 3 ? 0 : before - 3);
  if (end == std::string::npos) {
    at += take;
    if (pending_.size() >= kMaxHttpHead) return Refuse("a request head over 8 KiB");
    // A head that is already wrong is refused now, not when the client stops sending.
    if (ReadHttpHost(pending_).status == HttpHeadStatus::kInvalid) {
      return Refuse("a malformed request head");
    }
    return true;
  }
  const size_t head_size = end + 4;
  at += head_size - before;
  pending_.resize(head_size);
  const bool ok = OnHead(pending_, out);
  pending_.clear();
  return ok;
}

bool HttpRequestStream::OnHead(std::string_view head, std::vector<uint8_t>& out) {
  const HttpHeadResult read = ReadHttpHost(head);
  if (read.status != HttpHeadStatus::kHost || read.head_size != head.size()) {
    return Refuse("a malformed request head");
  }
  const std::string host = ComparableHost(read.host);
  if (requests_ == 0) name_ = host;
  if (host != name_) return Refuse("Host " + host + " on a connection allowed for " + name_);
  if (read.host_port && *read.host_port != port_) {
    return Refuse("a Host naming port " + std::to_string(*read.host_port));
  }
  if (read.method == "CONNECT") return Refuse("CONNECT on plain HTTP");
  const FramingCheck framing = CheckRequestFraming(read.http10, read.fields, false);
  if (!framing.problem.empty()) return Refuse(framing.problem);
  // Front ends that ignore a body on these methods read it as the next request, which this
  // stream would have passed as body, unchecked (the CL.0 / TE.0 desyncs).
  if (framing.framing != BodyFraming::kNone && MethodTakesNoBody(read.method)) {
    return Refuse("a body on a " + std::string(read.method) + " request");
  }
  AppendWithoutExpect(out, head);
  ++requests_;
  left_ = framing.length;
  switch (framing.framing) {
    case BodyFraming::kNone:
      state_ = State::kHead;
      break;
    case BodyFraming::kLength:
      state_ = State::kBody;
      break;
    case BodyFraming::kChunked:
      state_ = State::kChunkSize;
      break;
  }
  return true;
}

bool HttpRequestStream::FeedLine(std::span<const uint8_t> in, size_t& at,
                                 std::vector<uint8_t>& out) {
  const auto* begin = in.data() + at;
  const auto* end = in.data() + in.size();
  const auto* lf = std::find(begin, end, uint8_t{'\n'});
  const size_t take = static_cast<size_t>(lf - begin) + (lf == end ? 0 : 1);
  pending_.append(reinterpret_cast<const char*>(begin), take);
  at += take;
  const size_t limit = state_ == State::kChunkSize  ? kMaxChunkSizeLine
                       : state_ == State::kChunkEnd ? 2
                                                    : kMaxHttpHead - trailer_bytes_;
  if (pending_.size() > limit) return Refuse("an over-long chunk line or trailer");
  if (lf == end) return true;
  const bool ok = OnLine(pending_, out);
  pending_.clear();
  return ok;
}

bool HttpRequestStream::OnLine(std::string_view line, std::vector<uint8_t>& out) {
  if (line.size() < 2 || line[line.size() - 2] != '\r') return Refuse("a chunk line ended by LF");
  const std::string_view content = line.substr(0, line.size() - 2);
  switch (state_) {
    case State::kChunkSize: {
      if (content.empty() || !std::all_of(content.begin(), content.end(), IsHexDigit) ||
          (content.size() > 1 && content.front() == '0')) {
        return Refuse("a chunk size that is not hex digits only, without leading zeros");
      }
      left_ = 0;
      for (char c : content) left_ = left_ * 16 + HexValue(c);
      if (left_ > kMaxBodyLength) return Refuse("a chunk size over 2^31 - 1");
      trailer_bytes_ = 0;
      state_ = left_ == 0 ? State::kTrailer : State::kChunkData;
      break;
    }
    case State::kChunkEnd:
      if (!content.empty()) return Refuse("chunk data longer than its size");
      state_ = State::kChunkSize;
      break;
    case State::kTrailer:
      if (!content.empty() && !IsHttpFieldLine(content)) return Refuse("a malformed trailer");
      trailer_bytes_ += line.size();
      if (content.empty()) state_ = State::kHead;
      break;
    default:
      return Refuse("a line outside a chunked body");
  }
  Append(out, line);
  return true;
}

bool HttpRequestStream::Refuse(std::string problem) {
  problem_ = std::move(problem);
  pending_.clear();
  return false;
}

}  // namespace sbx::netd
