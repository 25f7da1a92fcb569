// sbx command-line entry point: dispatches to the subcommands; everything else is the library's.
#include <cstdio>
#include <cstring>
#include <string>

#include "src/cli/agent_command.h"
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
               "  sbx doctor [--json]                  what this host supports and what run uses\n"
               "  sbx image build|ls|path|rm|verify    the Python root filesystem image\n"
               "  sbx --version | --help\n\n"
               "exit codes: the program's own; 128+N killed by signal N; 124 timed out;\n"
               "            125 sbx failed or refused; 126 cannot execute; 127 not found\n",
               SBX_VERSION);
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
  if (command == "run") return sbx::cli::RunRunCommand(argc - 1, argv + 1);
  if (command == "agent") return sbx::cli::RunAgentCommand(argc - 1, argv + 1);
  if (command == "doctor") return sbx::cli::RunDoctorCommand(argc - 1, argv + 1);
  if (command == "image") return sbx::cli::RunImageCommand(argc - 1, argv + 1);
  std::fprintf(stderr, "sbx: unknown command \"%s\"; see `sbx --help`\n", command.c_str());
  return 125;
}
