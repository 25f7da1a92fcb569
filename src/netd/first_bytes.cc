// Runs the ClientHello or the HTTP head reader on a connection's first bytes.
#include "src/netd/first_bytes.h"

#include <algorithm>
#include <string_view>

#include "src/netd/http_head.h"
#include "src/netd/tls_client_hello.h"

namespace sbx::netd {
namespace {

constexpr uint8_t kTlsHandshakeRecord = 22;

}  // namespace

bool PeeksFirstBytes(uint16_t port) { return port == 80 || port == 443; }

size_t FirstBytesReader::Room() const {
  const size_t cap =
      !buffer_.empty() && buffer_[0] == kTlsHandshakeRecord ? kMaxTlsPeek : kMaxHttpHead;
  return buffer_.size() >= cap ? 0 : cap - buffer_.size();
}

Peek FirstBytesReader::AtEndOfStream() const {
  if (!buffer_.empty() && buffer_[0] == kTlsHandshakeRecord) return Peek{PeekKind::kTlsInvalid, ""};
  return Peek{PeekKind::kHttpInvalid, ""};
}

std::optional<Peek> FirstBytesReader::Add(std::span<const uint8_t> chunk) {
  chunk = chunk.first(std::min(chunk.size(), Room()));
  buffer_.insert(buffer_.end(), chunk.begin(), chunk.end());
  if (buffer_.empty()) return std::nullopt;
  if (buffer_[0] == kTlsHandshakeRecord) {
    // Read the records again only once the one in progress can be complete.
    if (buffer_.size() < next_look_) return std::nullopt;
    TlsPeekResult tls = ReadClientHelloSni(buffer_);
    switch (tls.status) {
      case TlsPeekStatus::kNeedMore:
        next_look_ = tls.need_at_least;
        return std::nullopt;
      case TlsPeekStatus::kSni:
        return Peek{PeekKind::kTlsSni, std::move(tls.name)};
      case TlsPeekStatus::kNoSni:
        return Peek{PeekKind::kTlsNoSni, ""};
      case TlsPeekStatus::kNotTls:
      case TlsPeekStatus::kInvalid:
        return Peek{PeekKind::kTlsInvalid, ""};
    }
  }
  // The head's answer changes only when a line completes (or the cap is reached).
  const bool new_line = std::find(chunk.begin(), chunk.end(), '\n') != chunk.end();
  if (!new_line && buffer_.size() > chunk.size() && Room() > 0) return std::nullopt;
  const std::string_view text(reinterpret_cast<const char*>(buffer_.data()), buffer_.size());
  HttpHeadResult http = ReadHttpHost(text);
  switch (http.status) {
    case HttpHeadStatus::kNeedMore:
      return std::nullopt;
    case HttpHeadStatus::kHost:
      return Peek{PeekKind::kHttpHost, std::move(http.host)};
    case HttpHeadStatus::kInvalid:
      return Peek{PeekKind::kHttpInvalid, ""};
  }
  return std::nullopt;
}

}  // namespace sbx::netd
