// Network namespace: in mode "none" the child brings up `lo` and nothing else exists.
#pragma once

namespace sbx {

// Sets IFF_UP on "lo" in the calling process's network namespace. Needs CAP_NET_ADMIN over
// that namespace. Async-signal-safe; returns 0 or an errno.
int BringUpLoopbackInChild();

}  // namespace sbx
