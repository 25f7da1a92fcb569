// Where the server listens: parsing `--listen unix:PATH | tcp:HOST:PORT`, opening the socket
// (a Unix socket 0600 in a private directory, replacing only a stale one), and who is calling.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::server {

struct ListenAddress {
  enum class Kind { kUnix, kTcp } kind = Kind::kUnix;
  std::string path;  // kUnix
  std::string host;  // kTcp: a name or address; "[::1]" brackets are removed
  std::string port;
  std::string ToString() const;  // as given: "unix:/run/sbx/sbx.sock", "tcp:127.0.0.1:8080"
};

// Parses one --listen value; the error names the flag and the accepted forms.
Result<ListenAddress> ParseListenAddress(const std::string& value);

// /run/sbx/sbx.sock as root, else $XDG_RUNTIME_DIR/sbx.sock (an error if that is unset).
Result<std::string> DefaultSocketPath();

// A listening socket (CLOEXEC, blocking). For kUnix: the directory is created 0700 if it is
// missing; a socket file nobody accepts on is replaced, a live one or any other file is an
// error; the socket is 0600. The caller unlinks the path when it stops (RemoveUnixSocket).
Result<UniqueFd> OpenListener(const ListenAddress& address);
void RemoveUnixSocket(const ListenAddress& address);

// The port a kTcp listener got (useful with port 0).
Result<int> BoundTcpPort(int listen_fd);

// Who is on the other end of a Unix-socket connection: only the server's own user and root
// may talk to it. TCP peers are checked by token instead (an error here: no credentials).
Result<uid_t> PeerUid(int connection_fd);

}  // namespace sbx::server
