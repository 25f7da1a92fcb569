// Incremental reader of the network audit log; see network_log.h.
#include "sandbox/network_log.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace sbx {
namespace {

// What the denial was about: the name when there is one, else the destination.
std::string DenialText(const nlohmann::json& record) {
  std::string what;
  for (const char* key : {"qname", "name", "dst"}) {
    auto it = record.find(key);
    if (it != record.end() && it->is_string() && !it->get<std::string>().empty()) {
      what = it->get<std::string>();
      break;
    }
  }
  if (what.empty()) what = "?";
  auto reason = record.find("reason");
  if (reason != record.end() && reason->is_string()) what += " (" + reason->get<std::string>() + ")";
  return what;
}

}  // namespace

NetworkLogDigest ReadNetworkLogSince(const std::string& path, uint64_t* offset) {
  NetworkLogDigest digest;
  std::ifstream in(path, std::ios::binary);
  if (!in) return digest;
  in.seekg(static_cast<std::streamoff>(*offset));
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline yet: netd is still writing this record
    *offset += line.size() + 1;
    auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) continue;
    auto decision = record.find("decision");
    if (decision == record.end() || !decision->is_string()) continue;
    if (*decision == "allow") {
      ++digest.allowed;
    } else if (*decision == "deny") {
      ++digest.denied;
      // A lookup asks for A and AAAA: one line per distinct denial is what a reader needs.
      std::string text = DenialText(record);
      if (digest.denials.size() < NetworkLogDigest::kMaxDenials &&
          std::find(digest.denials.begin(), digest.denials.end(), text) == digest.denials.end())
        digest.denials.push_back(text);
    }
  }
  return digest;
}

}  // namespace sbx
