// Closing what a sandboxed process inherited: the init keeps its two descriptors, a pooled
// session its standard streams and its socket; every other fd (the runner's pipes, other runs'
// fds, O_PATH fds of host directories) is closed.
#pragma once

#include <cstddef>

namespace sbx {

// Closes every descriptor but the `count` in `keep`, which must be ascending without repeats.
// Async-signal-safe (close_range over the gaps); returns 0 or an errno.
int CloseAllFdsExcept(const int* keep, size_t count);

}  // namespace sbx
