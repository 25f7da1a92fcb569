// Replaying a scripted conversation through the same parser real responses go through.
#include "src/agent/scripted_model.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace sbx::agent {

Result<ScriptedModel> ScriptedModel::Parse(const std::string& text) {
  auto script = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (script.is_discarded() || !script.is_object()) return InvalidInput("scripted model: not a JSON object");
  auto replies = script.find("replies");
  if (replies == script.end() || !replies->is_array() || replies->empty()) {
    return InvalidInput("scripted model: \"replies\" must be a non-empty array of assistant messages");
  }
  ScriptedModel model;
  auto label = script.find("label");
  model.label_ = label != script.end() && label->is_string() ? label->get<std::string>() : "unlabelled script";
  for (size_t i = 0; i < replies->size(); ++i) {
    nlohmann::json message = (*replies)[i];
    if (message.is_object() && !message.contains("role")) message["role"] = "assistant";
    nlohmann::json body = {{"id", "scripted-" + std::to_string(i)},
                           {"choices", nlohmann::json::array({{{"index", 0}, {"message", message}}})}};
    auto parsed = llm::ParseChatResponse(body.dump());
    if (!parsed) return InvalidInput("scripted model: replies[" + std::to_string(i) + "]: " + parsed.error().message);
    model.replies_.push_back(std::move(*parsed));
  }
  return model;
}

Result<ScriptedModel> ScriptedModel::Load(const std::string& path) {
  std::ifstream file(path);
  if (!file) return InvalidInput("scripted model: cannot read " + path);
  std::stringstream text;
  text << file.rdbuf();
  auto model = Parse(text.str());
  if (!model) return model.error().Context(path);
  return model;
}

Result<llm::ChatResponse> ScriptedModel::Complete(const llm::ChatRequest&) {
  if (next_ >= replies_.size()) {
    return MakeError(ErrorCode::kIo, "scripted model: the script has no reply left (it has " +
                                         std::to_string(replies_.size()) + ")");
  }
  return replies_[next_++];
}

}  // namespace sbx::agent
