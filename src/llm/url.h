// The two things sbx reads out of a base URL: its host, and a form safe to print.
#pragma once

#include <string>

namespace sbx::llm {

// "https://user:pw@API.example.com:8443/v1?x" -> "api.example.com:8443": the authority without
// user info, lower case. Empty when the URL has no "scheme://".
std::string UrlHostPort(const std::string& url);

// The URL without user info and without query or fragment, where proxies put credentials:
// "http://user:pw@host/v1?key=k" -> "http://host/v1".
std::string UrlForDisplay(const std::string& url);

}  // namespace sbx::llm
