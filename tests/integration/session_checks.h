// Escape checks run against any session executor (cold or pooled): the same probes, so pooled
// sessions are held to exactly what cold ones are.
#pragma once

#include <memory>
#include <string>

#include "src/executor/code_executor.h"
#include "src/executor/executors.h"

namespace sbx::testing {

// A test executor's options: the test image, a per-block timeout of `timeout_seconds` (scaled
// to this machine's wall clock) and a 1 s grace.
executor::ExecutorOptions TestExecutorOptions(double timeout_seconds = 20);
// A session (null, with a test failure, when it cannot start).
std::unique_ptr<executor::SessionExecutor> NewSession(
    executor::ExecutorOptions options = TestExecutorOptions());
// Runs one block; a failed call is a test failure and an empty result.
executor::CodeResult RunBlock(executor::CodeExecutor& executor, const std::string& language,
                              const std::string& source);
executor::CodeResult Python(executor::CodeExecutor& executor, const std::string& source);

// Hostname "sandbox", uid 1000, CapPrm/CapEff/CapBnd zero, NoNewPrivs 1, no variable of the
// runner's environment (a secret set just before), /root unreadable, only lo; and the
// differential control: the same probe on the host sees the secret and host root.
void ExpectIsolatedWithoutHostSecrets(executor::CodeExecutor& executor);

// The seccomp filter is on: mount(2) and setns(2) with a bad pointer / fd fail with EPERM
// (filtered) inside, while on the host the same calls reach the kernel and fail with EFAULT
// and EBADF (harmless: nothing is mounted or entered).
void ExpectSeccompFilterActive(executor::CodeExecutor& executor);

// Python for a block that forges on its driver's channel (they share a process): it finds the
// channel (the one socket among the cell's fds) and the cell's id (its file is cell-<id>.py),
// then defines send(payload), writing one frame, and output(text, id=cell), one output frame.
inline constexpr char kChannelPrelude[] = R"(
import json, os, stat, struct, sys
cell = int(sys._getframe().f_code.co_filename.rsplit("cell-", 1)[1].split(".")[0])
channel = next(fd for fd in range(3, 256)
               if os.path.exists("/proc/self/fd/%d" % fd) and stat.S_ISSOCK(os.fstat(fd).st_mode))
def send(payload):
    view = memoryview(struct.pack(">I", len(payload)) + payload)
    while view:
        view = view[os.write(channel, view):]
def output(text, id=None):
    send(json.dumps({"op": "output", "id": cell if id is None else id, "stream": "stdout",
                     "text": text}).encode())
)";

}  // namespace sbx::testing
