// Reads the host's interface addresses with getifaddrs(3).
#include "src/netd/host_addresses.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <memory>

#include "src/netd/endpoint.h"

namespace sbx::netd {

Result<std::vector<IpAddress>> ReadHostAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return SysError(ErrorCode::kSetupFailed, "getifaddrs (the host's own addresses)");
  }
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owned(list, freeifaddrs);
  std::vector<IpAddress> addresses;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    const socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    const auto endpoint = EndpointFromSockaddr(entry->ifa_addr, length);
    if (!endpoint) continue;
    if (std::find(addresses.begin(), addresses.end(), endpoint->address) == addresses.end()) {
      addresses.push_back(endpoint->address);
    }
  }
  return addresses;
}

}  // namespace sbx::netd
