// Incremental reader of the network audit log; see network_log.h.
#include "sandbox/net/network_log.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace sbx {
namespace {

// Adds `text` once, keeping at most kMaxDenials.
void AddDistinct(std::vector<std::string>& texts, std::string text) {
  if (texts.size() < NetworkLogDigest::kMaxDenials &&
      std::find(texts.begin(), texts.end(), text) == texts.end()) {
    texts.push_back(std::move(text));
  }
}

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

bool IsNetworkFailureReason(const std::string& reason) {
  return reason == "resolve_failed" || reason == "upstream_error" || reason == "tls_verify_failed";
}

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
      auto reason = record.find("reason");
      const bool failure = reason != record.end() && reason->is_string() &&
                           IsNetworkFailureReason(reason->get<std::string>());
      AddDistinct(failure ? digest.failures : digest.denials, DenialText(record));
    }
  }
  return digest;
}

}  // namespace sbx
