// Reads and writes the control protocol's datagrams; receives the capture fds.
#include "src/netd/control.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "netpolicy/netd_protocol.h"
#include "netpolicy/network_allowlist_json.h"

namespace sbx::netd {
namespace {

using nlohmann::json;

constexpr size_t kMaxRunId = 128;
// network.extra_ca_files and upstream_ca_files: 16 entries each at most (network_inject_json.cc),
// each kNetdMaxCaFileBytes and the final newline the runner may add.
constexpr size_t kMaxCaFiles = 32;
constexpr size_t kMaxCaFileText = kNetdMaxCaFileBytes + 1;

Error ProtocolError(const std::string& what) {
  return MakeError(ErrorCode::kInvalidInput, "control: " + what);
}

// One datagram; its fds (SCM_RIGHTS), if `fds` is given, are owned by the caller on return.
Result<std::string> ReceiveMessage(int control_fd, std::vector<UniqueFd>* fds) {
  std::string buffer(kNetdMaxMessage + 1, '\0');
  union {
    cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(int) * kNetdMaxFdsPerMessage)];
  } control;
  iovec iov{buffer.data(), buffer.size()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.bytes;
  message.msg_controllen = sizeof(control.bytes);
  ssize_t size;
  do {
    size = recvmsg(control_fd, &message, MSG_CMSG_CLOEXEC);
  } while (size < 0 && errno == EINTR);
  if (size < 0) return SysError(ErrorCode::kIo, "control: recvmsg");
  // Take every fd before any check, so none leaks whatever happens next.
  std::vector<UniqueFd> received;
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&message); cmsg != nullptr;
       cmsg = CMSG_NXTHDR(&message, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
      received.emplace_back(fd);
    }
  }
  if (size == 0) return ProtocolError("the runner closed the control socket");
  if (message.msg_flags & MSG_CTRUNC) return ProtocolError("more fds than one message may carry");
  if (message.msg_flags & MSG_TRUNC || static_cast<size_t>(size) > kNetdMaxMessage) {
    return ProtocolError("message larger than " + std::to_string(kNetdMaxMessage) + " bytes");
  }
  if (fds != nullptr) {
    *fds = std::move(received);
  } else if (!received.empty()) {
    return ProtocolError("unexpected fds");
  }
  buffer.resize(static_cast<size_t>(size));
  return buffer;
}

Result<void> SendText(int control_fd, const std::string& text) {
  ssize_t sent;
  do {
    sent = send(control_fd, text.data(), text.size(), MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return SysError(ErrorCode::kIo, "control: send");
  return Ok{};
}

Result<void> SendMessage(int control_fd, const json& message) {
  return SendText(control_fd, message.dump(-1, ' ', true, json::error_handler_t::replace));
}

// `keys` must all be present; `optional_keys` may be.
Result<json> ParseObject(const std::string& text, const std::set<std::string>& keys,
                         const std::set<std::string>& optional_keys = {}) {
  json object;
  try {
    object = json::parse(text);
  } catch (const json::parse_error& error) {
    // Only the offset: the parser's message quotes the text around the error, and the hello
    // holds secrets.
    return ProtocolError("not JSON (at byte " + std::to_string(error.byte) + ")");
  } catch (const json::exception& error) {
    return ProtocolError("not JSON (error " + std::to_string(error.id) + ")");
  }
  if (!object.is_object()) return ProtocolError("expected an object");
  for (const auto& [key, value] : object.items()) {
    if (!keys.contains(key) && !optional_keys.contains(key)) {
      return ProtocolError("unknown key \"" + key + "\"");
    }
  }
  for (const std::string& key : keys) {
    if (!object.contains(key)) return ProtocolError("missing key \"" + key + "\"");
  }
  return object;
}

// The CA files' texts: `ca_texts` cut at "ca_file_sizes", `count` of them (0: the key must be
// absent and there must be no texts).
Result<std::vector<std::string>> SplitCaTexts(const json& hello, size_t count,
                                              const std::string& ca_texts) {
  if (hello.contains("ca_file_sizes") != (count > 0)) {
    return ProtocolError(count > 0 ? "ca_file_sizes: missing, but the policy names CA files"
                                   : "ca_file_sizes: present, but the policy names no CA file");
  }
  std::vector<std::string> texts;
  if (count == 0) {
    if (!ca_texts.empty()) return ProtocolError("CA file texts, but the policy names no CA file");
    return texts;
  }
  const json& sizes = hello["ca_file_sizes"];
  if (!sizes.is_array() || sizes.size() != count) {
    return ProtocolError("ca_file_sizes: expected " + std::to_string(count) +
                         " sizes (one per network.extra_ca_files entry, then one per "
                         "upstream_ca_files entry with inject rules)");
  }
  size_t at = 0;
  for (const json& size : sizes) {
    if (!size.is_number_unsigned() || size.get<uint64_t>() == 0 ||
        size.get<uint64_t>() > kMaxCaFileText || size.get<uint64_t>() > ca_texts.size() - at) {
      return ProtocolError("ca_file_sizes: expected sizes of 1 to " +
                           std::to_string(kMaxCaFileText) + " bytes that add up to the " +
                           std::to_string(ca_texts.size()) + " bytes of CA texts");
    }
    texts.push_back(ca_texts.substr(at, size.get<size_t>()));
    at += size.get<size_t>();
  }
  if (at != ca_texts.size()) {
    return ProtocolError("ca_file_sizes: add up to " + std::to_string(at) + " bytes, not the " +
                         std::to_string(ca_texts.size()) + " bytes of CA texts");
  }
  return texts;
}

// The memfd of step 1, read whole from offset 0 (its shared offset is where the runner's
// writes left it).
Result<std::string> ReadCaTexts(int fd) {
  struct stat info {};
  if (fstat(fd, &info) != 0) return SysError(ErrorCode::kIo, "control: fstat(CA files memfd)");
  if (!S_ISREG(info.st_mode) || info.st_size < 0 ||
      static_cast<uint64_t>(info.st_size) > kMaxCaFiles * kMaxCaFileText) {
    return ProtocolError("the CA files' fd is not a file of at most " +
                         std::to_string(kMaxCaFiles * kMaxCaFileText) + " bytes");
  }
  std::string texts(static_cast<size_t>(info.st_size), '\0');
  size_t at = 0;
  while (at < texts.size()) {
    const ssize_t got = pread(fd, texts.data() + at, texts.size() - at, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return SysError(ErrorCode::kIo, "control: pread(CA files memfd)");
    if (got == 0) return ProtocolError("the CA files' memfd shrank while it was read");
    at += static_cast<size_t>(got);
  }
  return texts;
}

}  // namespace

Result<Hello> ParseHello(const std::string& text, const std::string& ca_texts) {
  auto object = ParseObject(text, {"v", "run", "audit_log", "network"}, {"ca_file_sizes", "tls"});
  if (!object) return object.error();
  json& hello = *object;
  // The parser's copies of the secrets are wiped on every path out of here.
  struct WipeTlsOnExit {
    json& hello;
    ~WipeTlsOnExit() {
      if (hello.contains("tls")) WipeJsonStrings(hello["tls"]);
    }
  } wipe_tls{hello};
  if (!hello["v"].is_number_integer() || hello["v"].get<int64_t>() != 1) {
    return ProtocolError("v: expected 1");
  }
  if (!hello["run"].is_string()) return ProtocolError("run: expected a string");
  Hello result;
  result.run_id = hello["run"].get<std::string>();
  if (result.run_id.empty() || result.run_id.size() > kMaxRunId) {
    return ProtocolError("run: expected 1 to " + std::to_string(kMaxRunId) + " bytes");
  }
  for (char c : result.run_id) {
    if (c < 0x21 || c > 0x7e) return ProtocolError("run: expected printable ASCII");
  }
  if (!hello["audit_log"].is_boolean()) return ProtocolError("audit_log: expected true or false");
  result.audit_log = hello["audit_log"].get<bool>();
  if (!hello["network"].is_object()) return ProtocolError("network: expected an object");
  // The policy loader's reader: inject rules included, checked as the loader checks them (every
  // inject host allowed on 443).
  auto allowlist = ParseNetworkAllowlistJson(hello["network"].dump());
  if (!allowlist) return allowlist.error().Context("control: network");
  result.allowlist = std::move(*allowlist);
  const size_t extra_count = result.allowlist.extra_ca_files.size();
  const size_t inject_count = result.allowlist.inject.size();
  // The upstream CAs matter (and are sent) only with inject rules.
  const size_t upstream_count = inject_count > 0 ? result.allowlist.upstream_ca_files.size() : 0;
  SBX_ASSIGN_OR_RETURN(auto ca_pems, SplitCaTexts(hello, extra_count + upstream_count, ca_texts));
  result.extra_ca_pems.assign(ca_pems.begin(), ca_pems.begin() + extra_count);
  if (hello.contains("tls") != (inject_count > 0)) {
    return ProtocolError(inject_count > 0 ? "tls: missing, but network.inject has rules"
                                          : "tls: present, but network.inject is empty");
  }
  if (inject_count > 0) {
    auto tls = ParseTlsConfig(hello["tls"], inject_count);
    if (!tls) return tls.error();
    result.tls = std::move(*tls);
    result.tls->upstream_ca_pems.assign(ca_pems.begin() + extra_count, ca_pems.end());
  }
  return result;
}

Result<Hello> ReceiveHello(int control_fd) {
  std::vector<UniqueFd> fds;
  auto text = ReceiveMessage(control_fd, &fds);
  if (!text) return text.error();
  // Wiped however this returns: it holds the secrets.
  ScopedWipe wipe_text(*text);
  if (fds.size() > 1) return ProtocolError("hello: more than one fd (the CA files' memfd)");
  std::string ca_texts;
  if (fds.size() == 1) {
    SBX_ASSIGN_OR_RETURN(auto read, ReadCaTexts(fds[0].get()));
    ca_texts = std::move(read);
  }
  return ParseHello(*text, ca_texts);
}

Result<std::vector<CaptureSocket>> ReceiveCaptureSockets(int control_fd) {
  std::vector<CaptureSocket> sockets;
  while (true) {
    std::vector<UniqueFd> fds;
    SBX_ASSIGN_OR_RETURN(auto text, ReceiveMessage(control_fd, &fds));
    SBX_ASSIGN_OR_RETURN(auto object, ParseObject(text, {"capture", "last"}));
    const json& batch = object;
    if (!batch["capture"].is_array() || !batch["last"].is_boolean()) {
      return ProtocolError("capture: expected an array and \"last\" true or false");
    }
    if (batch["capture"].size() != fds.size()) {
      return ProtocolError("capture: " + std::to_string(batch["capture"].size()) + " entries but " +
                           std::to_string(fds.size()) + " fds");
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      const json& entry = batch["capture"][i];
      const std::string where = "capture[" + std::to_string(i) + "]";
      if (!entry.is_object() || entry.size() != 2 || !entry.contains("proto") ||
          !entry.contains("port")) {
        return ProtocolError(where + ": expected {\"proto\":...,\"port\":...}");
      }
      CaptureSocket socket;
      const auto kind =
          entry["proto"].is_string() ? ParseCaptureKind(entry["proto"].get<std::string>()) : std::nullopt;
      if (!kind) {
        return ProtocolError(where +
                             ".proto: expected \"tcp\", \"redirect\", \"proxy\", \"udp\" or \"udp_tap\"");
      }
      socket.kind = *kind;
      // A tap (a raw socket) has no port: its port is 0.
      const int64_t least = socket.kind == CaptureKind::kUdpTap ? 0 : 1;
      const int64_t most = socket.kind == CaptureKind::kUdpTap ? 0 : 65535;
      if (!entry["port"].is_number_integer() || entry["port"].get<int64_t>() < least ||
          entry["port"].get<int64_t>() > most) {
        return ProtocolError(where + ".port: expected " +
                             (most == 0 ? std::string("0 (udp_tap)") : std::string("1..65535")));
      }
      socket.port = static_cast<uint16_t>(entry["port"].get<int64_t>());
      socket.fd = std::move(fds[i]);
      sockets.push_back(std::move(socket));
    }
    if (batch["last"].get<bool>()) return sockets;
  }
}

Result<void> SendRunCa(int control_fd, const std::string& ca_cert_pem) {
  return SendMessage(control_fd, {{"ca_cert_pem", ca_cert_pem}});
}

Result<void> SendReady(int control_fd) { return SendMessage(control_fd, {{"ready", true}}); }

Result<void> SendError(int control_fd, const std::string& why) {
  return SendMessage(control_fd, {{"error", why}});
}

Result<void> SendServing(int control_fd) { return SendMessage(control_fd, {{"serving", true}}); }

std::string SummaryMessage(const RunSummary& summary) {
  json message = {{"summary",
                   {{"dns_queries", summary.dns_queries},
                    {"allowed", summary.allowed},
                    {"denied", summary.denied},
                    {"denied_names", summary.denied_names},
                    {"bytes_up", summary.bytes_up},
                    {"bytes_down", summary.bytes_down},
                    {"log_sha256", summary.log_sha256}}}};
  return message.dump(-1, ' ', true, json::error_handler_t::replace);
}

Result<void> SendSummary(int control_fd, const RunSummary& summary) {
  return SendText(control_fd, SummaryMessage(summary));
}

void ControlWatcher::Start(std::function<void()> on_stop, std::function<void()> on_hangup) {
  on_stop_ = std::move(on_stop);
  on_hangup_ = std::move(on_hangup);
  Wait();
}

void ControlWatcher::Wait() {
  descriptor_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                         [this](boost::system::error_code ec) {
                           if (ec == boost::asio::error::operation_aborted) return;
                           if (ec) return on_hangup_();
                           auto text = ReceiveMessage(descriptor_.native_handle(), nullptr);
                           if (!text) return on_hangup_();
                           auto object = ParseObject(*text, {"stop"});
                           if (!object || (*object)["stop"] != true) return on_hangup_();
                           on_stop_();
                         });
}

}  // namespace sbx::netd
