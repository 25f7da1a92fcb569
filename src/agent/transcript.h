// The run's transcript: one JSON object per line, written as the run goes, so a run that
// ends badly still leaves what happened. It holds messages, tool calls, results and the
// ending; it never holds credentials (the LLM client keeps the key to itself).
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace sbx::agent {

class Transcript {
 public:
  Transcript() = default;  // records nothing
  ~Transcript();
  Transcript(const Transcript&) = delete;
  Transcript& operator=(const Transcript&) = delete;

  // Creates `path` (0600, never through a symlink); an existing file is an error.
  static Result<void> Open(Transcript& transcript, const std::string& path);
  // Adds {"event": event, ...fields}; a write failure stops recording, never the run.
  void Add(const std::string& event, nlohmann::json fields);

 private:
  FILE* file_ = nullptr;
};

}  // namespace sbx::agent
