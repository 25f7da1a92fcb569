// sbx command-line entry point: dispatches to the subcommands.
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("sbx %s\n", SBX_VERSION);
    return 0;
  }
  std::fprintf(stderr, "sbx: not yet implemented\n");
  return 125;
}
