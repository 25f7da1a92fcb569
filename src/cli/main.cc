// sbx command-line entry point: dispatches to the subcommands; everything else is the library's.
// `sbx agent` is a separate program (sbx-agent, next to sbx): the LLM client's libcurl pulls in
// some thirty shared libraries whose loading and relocation would cost every `sbx run`
// milliseconds, so sbx itself links none of them (and its own libraries statically, see
// CMakeLists.txt).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/sibling_executable.h"
#include "sandbox/launch/reap_later.h"
#include "src/cli/doctor_command.h"
#include "src/cli/image_command.h"
#include "src/cli/run_command.h"

namespace {

void PrintUsage() {
  std::fprintf(stderr,
               "sbx %s: run code in a sandbox (namespaces, overlay root, cgroups, seccomp)\n\n"
               "usage:\n"
               "  sbx run [FLAGS] -- COMMAND [ARG...]   run a command in a fresh sandbox\n"
               "  sbx agent --task TEXT [FLAGS]        an LLM agent that writes and runs code in a session\n"
               "  sbx serve [FLAGS]                    serve sessions over HTTP (docs/server-api.md)\n"
               "  sbx doctor [--json]                  what this host supports and what run uses\n"
               "  sbx image build|ls|path|rm|verify    the Python root filesystem image\n"
               "  sbx --version | --help\n\n"
               "exit codes: the program's own; 128+N killed by signal N; 124 timed out;\n"
               "            125 sbx failed or refused; 126 cannot execute; 127 not found\n",
               SBX_VERSION);
}

// Replaces this process with the sibling program `program` (sbx-agent, sbx-serve), passing the
// arguments after the subcommand and the environment unchanged (the agent reads its model's key
// from it; the sandboxes never see it).
int ExecSibling(const std::string& program, char** argv) {
  auto path = sbx::SiblingExecutable(program, "build it: tools/build.sh");
  if (!path) {
    std::fprintf(stderr, "sbx: %s\n", path.error().ToString().c_str());
    return 125;
  }
  std::string name = program;
  argv[1] = name.data();
  execv(path->c_str(), argv + 1);
  std::fprintf(stderr, "sbx: execv(%s): %s\n", path->c_str(), std::strerror(errno));
  return 125;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage();
    return 125;
  }
  std::string command = argv[1];
  if (command == "--version") {
    std::printf("sbx %s\n", SBX_VERSION);
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    PrintUsage();
    return 0;
  }
  if (command == "run") {
    sbx::ReapOnlyInWaitForReaps();  // one run, then its reaps: no thread needed (reap_later.h)
    const int status = sbx::cli::RunRunCommand(argc - 1, argv + 1);
    sbx::WaitForReaps();  // nothing of the run outlives this process (reap_later.h)
    return status;
  }
  if (command == "agent") return ExecSibling("sbx-agent", argv);
  if (command == "serve") return ExecSibling("sbx-serve", argv);
  if (command == "doctor") return sbx::cli::RunDoctorCommand(argc - 1, argv + 1);
  if (command == "image") return sbx::cli::RunImageCommand(argc - 1, argv + 1);
  std::fprintf(stderr, "sbx: unknown command \"%s\"; see `sbx --help`\n", command.c_str());
  return 125;
}
