// sbx-serve: `sbx serve`, as its own program so that the CLI stays free of the server's
// threads and Boost (sbx execs this with argv[0] = "sbx-serve" in place of "serve").
#include "sandbox/launch/reap_later.h"
#include "src/cli/serve_command.h"

int main(int argc, char** argv) {
  const int status = sbx::cli::RunServeCommand(argc, argv);
  sbx::WaitForReaps();  // nothing of its sessions outlives this process (reap_later.h)
  return status;
}
