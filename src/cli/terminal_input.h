// `sbx run --stdin -` from a terminal: the program reads a pipe fed from it, never the terminal.
//
// Usage: `SBX_ASSIGN_OR_RETURN(UniqueFd input, InputFromTerminal(0));` then pass input.get() as
// the program's stdin; a detached thread copies what the terminal delivers into the pipe until
// the terminal's end of file or the program's end of the pipe. Handed the terminal itself, the
// program could change its modes for the caller's shell (echo off after the run), write to it
// past the output capture and `--json`, and reach its ioctls; Docker's `-i` relays input the
// same way.
#pragma once

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::cli {

Result<UniqueFd> InputFromTerminal(int terminal_fd);

}  // namespace sbx::cli
