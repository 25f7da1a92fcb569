// `sbx run`: flags -> RunSpec -> RunSandboxed -> exit code (and --json).
#pragma once

namespace sbx::cli {

int RunRunCommand(int argc, char** argv);
void PrintRunUsage();

}  // namespace sbx::cli
