// Where a session driver runs: in a sandbox (the real thing) or on the host (development only).
//
// Both give the same three things: a socket to the driver (its fd 0), an fd that becomes
// readable once every process of the driver is gone, and Stop(), which kills the whole tree.
// The destructor stops and reaps, so a DriverProcess never outlives its owner's scope.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "sandbox/launch/run_result.h"
#include "sandbox/launcher.h"

namespace sbx::executor {

class DriverProcess {
 public:
  virtual ~DriverProcess() = default;
  int channel_fd() const { return channel_.get(); }
  virtual int ended_fd() const = 0;
  // Ends every process of the driver now (idempotent) and waits until they are gone.
  virtual void Stop() = 0;
  // Starts ending the driver without waiting: safe from another thread while the owner talks
  // to the driver or waits for it (the owner then sees the channel close and Stops as usual).
  virtual void Kill() = 0;
  // How it ended; waits for the end. An Error: the sandbox was refused or failed to start.
  virtual Result<RunResult> Wait() = 0;
  // Shuts the channel both ways without waiting: the driver reads EOF and exits by itself.
  void Hangup() { ::shutdown(channel_.get(), SHUT_RDWR); }

 protected:
  UniqueFd channel_;
};

// Runs `argv` (the driver) as the program of RunSandboxed(spec) on a thread of its own, with a
// socket as stdin and spec.cancel_fd wired to Stop(). `spec` must outlive nothing: it is copied;
// spec.held_workspace must outlive the DriverProcess.
Result<std::unique_ptr<DriverProcess>> StartSandboxedDriver(RunSpec spec);

// Runs `argv` directly on the host in `workspace_dir`: NO ISOLATION. The environment is the
// sandbox's allowlist (never the caller's), the process gets its own session and process
// group, and Stop() kills the group.
Result<std::unique_ptr<DriverProcess>> StartLocalDriver(const std::vector<std::string>& argv,
                                                        const std::string& workspace_dir);

}  // namespace sbx::executor
