// Putting every signal the runner handled or ignored back to its default, before the program
// is spawned. Async-signal-safe: runs in the child between clone() and execve().
#pragma once

#include <cstdint>
#include <string_view>

namespace sbx {

// Bit (signal - 1) set for each signal whose disposition a reset must restore.
struct SignalDispositions {
  uint64_t ignored = 0;  // SigIgn
  uint64_t caught = 0;   // SigCgt: a handler is installed
};

// Reads SigIgn and SigCgt from the text of /proc/<pid>/status. False when either is missing or
// is not 16 hex digits.
bool ParseSignalDispositions(std::string_view status, SignalDispositions* out);

// Sets to SIG_DFL each signal that /proc/self/status shows ignored or handled, and SIGCHLD
// (whose flags, such as SA_NOCLDWAIT, matter even at its default action); every signal when
// /proc/self/status cannot be read. The caller blocks all signals first.
void ResetSignalDispositionsInChild();

}  // namespace sbx
