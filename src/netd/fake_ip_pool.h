// The fake addresses sbx-netd's DNS stub hands out: names <-> IPv4 addresses in 198.18.0.0/15.
//
// A name gets the address at slot FNV-1a(name) mod the pool size (so the same name tends to get
// the same address in every run, which keeps logs comparable), the next free slot on a
// collision (linear probing). A mapping, once made, lasts for the whole run and no address is
// ever handed to a second name: a connection to a fake address always means the name that was
// answered for it. The first and last address of the range (198.18.0.0, 198.19.255.255) are
// never handed out, as some software treats them as network and broadcast addresses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sbx::netd {

inline constexpr uint32_t kFakePoolBase = 0xc6120000;  // 198.18.0.0
inline constexpr uint32_t kFakePoolSize = 1u << 17;    // a /15
inline constexpr uint32_t kFakePoolMaxNames = kFakePoolSize / 2;

// True for addresses in 198.18.0.0/15 (host byte order).
bool InFakeRange(uint32_t ipv4);

uint32_t Fnv1a32(std::string_view bytes);

class FakeIpPool {
 public:
  // The address (host byte order) of `name`, assigning one if it has none. nullopt once
  // kFakePoolMaxNames names have one: at most half the range is used, which keeps every probe
  // chain short (a wildcard rule lets the sandbox invent names, so the bound is reachable).
  std::optional<uint32_t> Assign(const std::string& name);
  // The name an address was handed out for, or nullptr.
  const std::string* NameOf(uint32_t ipv4) const;
  // The address `name` already has, without assigning one.
  std::optional<uint32_t> AddressOf(const std::string& name) const;
  size_t size() const { return by_name_.size(); }

 private:
  std::unordered_map<std::string, uint32_t> by_name_;
  std::unordered_map<uint32_t, std::string> by_address_;
};

// "198.18.4.17" from a host-byte-order address.
std::string Ipv4ToString(uint32_t ipv4);

}  // namespace sbx::netd
