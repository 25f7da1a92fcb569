// Feeds a connection's first bytes to FirstBytesReader as sbx-netd's reads would (each read at
// most Room() bytes, in uneven chunks), for the targets that compare it with the one-shot
// readers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "src/netd/first_bytes.h"

namespace sbx::netd::fuzz {

struct Fed {
  std::optional<Peek> peek;  // the verdict, when the bytes decided one
  size_t consumed = 0;       // the bytes the reader had taken by then
};

// Chunk sizes come from a small generator seeded by the input, so a crash reproduces.
inline Fed FeedInChunks(std::span<const uint8_t> bytes) {
  FirstBytesReader reader;
  uint32_t state = static_cast<uint32_t>(bytes.size()) * 2654435761u + 1;
  size_t at = 0;
  while (at < bytes.size() && reader.Room() > 0) {
    state = state * 1103515245u + 12345u;
    const size_t want = state >> 16 & 1 ? 1 + (state >> 17) % 7 : 1 + (state >> 17) % 700;
    const size_t take = std::min({want, bytes.size() - at, reader.Room()});
    auto peek = reader.Add(bytes.subspan(at, take));
    at += take;
    if (peek) return {std::move(peek), at};
  }
  return {std::nullopt, at};
}

}  // namespace sbx::netd::fuzz
