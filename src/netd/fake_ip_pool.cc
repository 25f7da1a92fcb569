// Assigns and looks up fake addresses by FNV-1a slot and linear probing.
#include "src/netd/fake_ip_pool.h"

namespace sbx::netd {

bool InFakeRange(uint32_t ipv4) { return (ipv4 & ~(kFakePoolSize - 1)) == kFakePoolBase; }

uint32_t Fnv1a32(std::string_view bytes) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

std::optional<uint32_t> FakeIpPool::Assign(const std::string& name) {
  if (auto found = by_name_.find(name); found != by_name_.end()) return found->second;
  if (by_address_.size() >= kFakePoolMaxNames) return std::nullopt;
  uint32_t slot = Fnv1a32(name) % kFakePoolSize;
  while (true) {
    const uint32_t address = kFakePoolBase + slot;
    if (slot != 0 && slot != kFakePoolSize - 1 && !by_address_.contains(address)) {
      by_name_.emplace(name, address);
      by_address_.emplace(address, name);
      return address;
    }
    slot = (slot + 1) % kFakePoolSize;
  }
}

const std::string* FakeIpPool::NameOf(uint32_t ipv4) const {
  auto found = by_address_.find(ipv4);
  return found == by_address_.end() ? nullptr : &found->second;
}

std::optional<uint32_t> FakeIpPool::AddressOf(const std::string& name) const {
  auto found = by_name_.find(name);
  if (found == by_name_.end()) return std::nullopt;
  return found->second;
}

std::string Ipv4ToString(uint32_t ipv4) {
  return std::to_string(ipv4 >> 24) + "." + std::to_string((ipv4 >> 16) & 0xff) + "." +
         std::to_string((ipv4 >> 8) & 0xff) + "." + std::to_string(ipv4 & 0xff);
}

}  // namespace sbx::netd
