// A scripted stand-in for a model, for the offline demo and for tests: it replays assistant
// replies from a JSON file, in order, whatever it is asked. It is NOT a model; the CLI labels
// every run that uses it. File format:
//   {"label": "what this script is", "replies": [<assistant message in Chat Completions
//    form: {"content": ..., "tool_calls": [...]}>, ...]}
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "src/llm/llm_client.h"

namespace sbx::agent {

class ScriptedModel final : public llm::LlmClient {
 public:
  // Reads and checks every reply up front; the error names the reply and the field.
  static Result<ScriptedModel> Load(const std::string& path);
  static Result<ScriptedModel> Parse(const std::string& text);

  Result<llm::ChatResponse> Complete(const llm::ChatRequest& request) override;
  const std::string& label() const { return label_; }

 private:
  std::string label_;
  std::vector<llm::ChatResponse> replies_;
  size_t next_ = 0;
};

}  // namespace sbx::agent
