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
#include "tests/fuzz/read_sizes.h"

namespace sbx::netd::fuzz {

struct Fed {
  std::optional<Peek> peek;  // the verdict, when the bytes decided one
  size_t consumed = 0;       // the bytes the reader had taken by then
};

inline Fed FeedInChunks(std::span<const uint8_t> bytes) {
  FirstBytesReader reader;
  ReadSizes sizes(bytes.size());
  size_t at = 0;
  while (at < bytes.size() && reader.Room() > 0) {
    const size_t take = std::min({sizes.Next(), bytes.size() - at, reader.Room()});
    auto peek = reader.Add(bytes.subspan(at, take));
    at += take;
    if (peek) return {std::move(peek), at};
  }
  return {std::nullopt, at};
}

}  // namespace sbx::netd::fuzz
