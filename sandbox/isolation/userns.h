// User namespace: which host ids the sandbox's uid/gid 1000 map to, written by the parent.
//
// Root mode (sbx runs as uid 0): the sandbox's 1000 maps to kRootModeHostId and the namespace's 0
// (used only by the setup steps, never by the program) to kRootModeSetupHostId, both reserved,
// unprivileged host ids (never 0, never the caller). Files the setup creates, such as the overlay's
// root directory, are then owned by the namespace's root and not writable by the program. Where
// sbx's root is itself in a user namespace that does not map those ids (a Kubernetes pod with
// hostUsers: false gets 0-65535), the two highest ids it does map stand in for them, below the
// overflow ids 65534 and 65535 when the range reaches them. Rootless mode: the caller's uid and gid
// map to 1000, nothing else. Host root is never mapped, so the image's root-owned files appear as
// the overflow id (nobody) inside and no inside id can act as host root.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"

namespace sbx {

inline constexpr uint32_t kSandboxId = 1000;
// sbx's reserved host id in root mode: far above login users and the 100000-65535 subuid
// ranges that useradd hands out, and below 2^31 so every tool prints it correctly.
inline constexpr uint32_t kRootModeHostId = 2000001000;
inline constexpr uint32_t kRootModeSetupHostId = 2000000000;

struct IdMapping {
  uint32_t host_uid = 0;
  uint32_t host_gid = 0;
  uint32_t setup_uid = 0;  // root mode: what the namespace's 0 maps to
  uint32_t setup_gid = 0;
  bool root_mode = false;          // the parent may write gid_map without denying setgroups
  std::string UidMapLine() const;  // "[0 <setup_uid> 1\n]1000 <host_uid> 1\n"
  std::string GidMapLine() const;
};

// One line of /proc/<pid>/uid_map: ids [inside, inside + count) map to [outside, ...).
struct IdRange {
  uint32_t inside = 0;
  uint32_t outside = 0;
  uint32_t count = 0;
};

// Pure: the lines of a uid_map or gid_map file.
Result<std::vector<IdRange>> ParseIdMap(const std::string& text);

// Pure: decides the mapping for a caller whose own namespace maps `own_uids` and `own_gids` (the
// ids sbx can hand out). Rejects mapping to host 0 or the overflow id, and a namespace that maps
// too few ids for root mode.
Result<IdMapping> ComputeIdMapping(uid_t caller_uid, gid_t caller_gid,
                                   const std::vector<IdRange>& own_uids,
                                   const std::vector<IdRange>& own_gids);

// The same for this process, with its own /proc/self/uid_map and gid_map (in the initial user
// namespace, the identity map those files hold, without reading them).
Result<IdMapping> ComputeIdMapping(uid_t caller_uid, gid_t caller_gid);

// Whether this process is in the host's initial user namespace (not in a container's).
bool InInitialUserNamespace();

// Writes /proc/<pid>/{setgroups,uid_map,gid_map} for the freshly cloned child. In rootless
// mode setgroups is set to "deny" first (the kernel requires it for an unprivileged writer).
Result<void> WriteIdMapsInParent(pid_t child, const IdMapping& mapping);

}  // namespace sbx
