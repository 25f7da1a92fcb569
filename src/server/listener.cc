// Opens the server's listening sockets and identifies Unix-socket peers.
#include "src/server/listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace sbx::server {
namespace {

constexpr int kBacklog = 512;

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path[0] != '/' || path.size() >= sizeof(address.sun_path)) {
    return InvalidInput("--listen unix:" + path + ": the socket path must be absolute and under " +
                        std::to_string(sizeof(address.sun_path)) + " bytes");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

// A socket file at `path` that nobody accepts on is left over from a server that died: remove
// it. Anything else there is someone's: refuse.
Result<void> ClearStaleSocket(const std::string& path, const sockaddr_un& address) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return SysError(ErrorCode::kInvalidInput, "--listen unix:" + path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return InvalidInput("--listen unix:" + path + ": a file that is not a socket is in the way; "
                        "choose another path or remove it");
  }
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!probe) return SysError(ErrorCode::kIo, "socket(AF_UNIX)");
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
    return MakeError(ErrorCode::kUnavailable, "--listen unix:" + path +
                                                  ": another server is listening there; stop "
                                                  "it or choose another path");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return SysError(ErrorCode::kIo, "remove the stale socket " + path);
  }
  return {};
}

Result<UniqueFd> OpenUnixListener(const std::string& path) {
  SBX_ASSIGN_OR_RETURN(auto address, UnixAddress(path));
  std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty() && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return SysError(ErrorCode::kInvalidInput, "--listen unix:" + path + ": create " + dir);
  }
  if (auto cleared = ClearStaleSocket(path, address); !cleared) return cleared.error();
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return SysError(ErrorCode::kIo, "socket(AF_UNIX)");
  // The socket is born 0600: no window in which another user could connect.
  mode_t old_mask = ::umask(0177);
  int bound = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  int bind_errno = errno;
  ::umask(old_mask);
  if (bound != 0) return SysError(ErrorCode::kInvalidInput, "--listen unix:" + path, bind_errno);
  if (::listen(fd.get(), kBacklog) != 0) return SysError(ErrorCode::kIo, "listen " + path);
  return fd;
}

Result<UniqueFd> OpenTcpListener(const ListenAddress& listen) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(listen.host.c_str(), listen.port.c_str(), &hints, &found); rc != 0) {
    return InvalidInput("--listen " + listen.ToString() + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
  UniqueFd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return SysError(ErrorCode::kIo, "socket");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), found->ai_addr, found->ai_addrlen) != 0) {
    return SysError(ErrorCode::kInvalidInput, "--listen " + listen.ToString());
  }
  if (::listen(fd.get(), kBacklog) != 0) return SysError(ErrorCode::kIo, "listen");
  return fd;
}

}  // namespace

std::string ListenAddress::ToString() const {
  if (kind == Kind::kUnix) return "unix:" + path;
  bool v6 = host.find(':') != std::string::npos;
  return "tcp:" + (v6 ? "[" + host + "]" : host) + ":" + port;
}

Result<ListenAddress> ParseListenAddress(const std::string& value) {
  const std::string forms = "; use unix:/ABSOLUTE/PATH or tcp:HOST:PORT (tcp:[::1]:PORT)";
  ListenAddress address;
  if (value.rfind("unix:", 0) == 0) {
    address.path = value.substr(5);
    if (auto valid = UnixAddress(address.path); !valid) return valid.error();
    return address;
  }
  if (value.rfind("tcp:", 0) != 0) return InvalidInput("--listen " + value + ": unknown form" + forms);
  address.kind = ListenAddress::Kind::kTcp;
  std::string rest = value.substr(4);
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return InvalidInput("--listen " + value + ": HOST and PORT are required" + forms);
  }
  address.host = rest.substr(0, colon);
  address.port = rest.substr(colon + 1);
  if (address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  if (address.port.find_first_not_of("0123456789") != std::string::npos || address.port.size() > 5 ||
      std::stoi(address.port) > 65535) {
    return InvalidInput("--listen " + value + ": the port must be a number 0..65535" + forms);
  }
  return address;
}

Result<std::string> DefaultSocketPath() {
  if (::geteuid() == 0) return std::string("/run/sbx/sbx.sock");
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime == nullptr || runtime[0] != '/') {
    return InvalidInput("no default socket: XDG_RUNTIME_DIR is unset; pass --listen unix:PATH");
  }
  return std::string(runtime) + "/sbx.sock";
}

Result<UniqueFd> OpenListener(const ListenAddress& address) {
  if (address.kind == ListenAddress::Kind::kUnix) return OpenUnixListener(address.path);
  return OpenTcpListener(address);
}

void RemoveUnixSocket(const ListenAddress& address) {
  if (address.kind == ListenAddress::Kind::kUnix) ::unlink(address.path.c_str());
}

Result<int> BoundTcpPort(int listen_fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return SysError(ErrorCode::kIo, "getsockname");
  }
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return InvalidInput("not a TCP listener");
}

Result<uid_t> PeerUid(int connection_fd) {
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  if (::getsockopt(connection_fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return SysError(ErrorCode::kIo, "SO_PEERCRED");
  }
  return credentials.uid;
}

}  // namespace sbx::server
