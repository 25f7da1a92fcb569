// What a process costs in memory, as /proc reports it.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace sbx::executor {

// Private_Clean + Private_Dirty of `pid` (smaps_rollup), in bytes: the memory only this process
// holds, which is what an idle pooled session costs the host beyond the zygote it shares pages
// with. 0 when the process is gone or its /proc entry unreadable.
uint64_t PrivateMemoryBytes(pid_t pid);

}  // namespace sbx::executor
