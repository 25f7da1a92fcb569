// The runner's personality, which a clone hands to the sandbox, reduced in the child to one the
// sandbox's program could have set itself.
//
// Usage, in the cloned child before anything of the sandbox runs:
//   `if (int err = UseTheSandboxPersonalityInChild()) FailSetup(sync_fd, ChildStep::kPersonality, err);`
#pragma once

namespace sbx {

// Personality flags weaken exploit mitigations, and most of them last across execve:
// ADDR_NO_RANDOMIZE (`setarch -R`, and every debugger's default for what it starts) turns address
// space randomisation off for every program started afterwards, MMAP_PAGE_ZERO maps page zero.
// The seccomp filter refuses them to the program; inherited, they would slip past it. Keeps
// what the filter allows: the execution domain (PER_LINUX or PER_LINUX32) and UNAME26.
// Async-signal-safe; returns 0 or an errno.
int UseTheSandboxPersonalityInChild();

}  // namespace sbx
