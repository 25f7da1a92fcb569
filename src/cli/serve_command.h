// `sbx serve`: the long-running server of docs/server-api.md.
#pragma once

namespace sbx::cli {

int RunServeCommand(int argc, char** argv);

}  // namespace sbx::cli
