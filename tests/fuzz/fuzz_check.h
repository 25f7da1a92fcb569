// The invariant check every fuzz target uses: a broken invariant aborts, so libFuzzer keeps the
// input as a crash like any sanitizer finding.
#pragma once

#include <cstdio>
#include <cstdlib>

#define SBX_FUZZ_CHECK(condition)                                                            \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)
