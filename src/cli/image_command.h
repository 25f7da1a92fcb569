// `sbx image ...`: the CLI over the image cache (sandbox/image/image.h).
#pragma once

namespace sbx::cli {

// Runs `sbx image build [--force] | ls | path | rm ID | verify [ID]`; argv[0] is "image".
// Returns the process exit code: 0 on success, 125 on any error (printed to stderr).
int RunImageCommand(int argc, char** argv);

}  // namespace sbx::cli
