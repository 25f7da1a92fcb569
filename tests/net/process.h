// Child processes of the network tests: commands run to completion under a deadline, and
// long-lived servers, each in its own process group so that one kill ends all it started.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/error.h"

namespace sbx::nettest {

struct CommandResult {
  int exit_code = -1;  // 128+N when killed by signal N
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs argv (argv[0] an absolute path) with stdin /dev/null and a fixed environment (PATH
// only: no proxy variables or other state of the caller leak into probes). After
// `timeout_seconds` the whole process group gets SIGKILL and `timed_out` is set. An error
// only when the command could not be started.
Result<CommandResult> RunBounded(const std::vector<std::string>& argv, double timeout_seconds);

// A server started with argv, its stdout and stderr appended to `log_path`, in a new process
// group, with PR_SET_PDEATHSIG(SIGKILL) so it dies with the test even when the test crashes.
// Move-only; the destructor stops it.
class ServerProcess {
 public:
  static Result<ServerProcess> Start(const std::vector<std::string>& argv,
                                     const std::string& log_path);
  ServerProcess() = default;
  ServerProcess(ServerProcess&& other) noexcept;
  ServerProcess& operator=(ServerProcess&& other) noexcept;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() { Stop(); }

  // SIGTERM to the group, up to 2 s for the leader to exit, then SIGKILL to the group; reaps.
  void Stop();
  // True while the leader has not exited.
  bool Running();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;  // the leader was reaped by Running(): its pid may be reused
};

}  // namespace sbx::nettest
