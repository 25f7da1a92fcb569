// Unit tests for the base URL helpers: the host that decides whether a key is required, and
// the credential-free form errors print.
#include "src/llm/url.h"

#include <gtest/gtest.h>

namespace sbx::llm {
namespace {

TEST(LlmUrl, HostPortIsLowerCaseWithoutUserInfo) {
  EXPECT_EQ(UrlHostPort("https://API.OpenAI.com/v1"), "api.openai.com");
  EXPECT_EQ(UrlHostPort("http://u:p@localhost:11434/v1"), "localhost:11434");
  EXPECT_EQ(UrlHostPort("http://h?x=1"), "h");
  EXPECT_EQ(UrlHostPort("http:///v1"), "");
  EXPECT_EQ(UrlHostPort("localhost:8000"), "");
}

TEST(LlmUrl, DisplayFormDropsCredentials) {
  EXPECT_EQ(UrlForDisplay("http://user:pw@host:8/v1/chat/completions"),
            "http://host:8/v1/chat/completions");
  EXPECT_EQ(UrlForDisplay("https://host/v1?api-key=k#frag"), "https://host/v1");
  EXPECT_EQ(UrlForDisplay("https://host/v1/a@b"), "https://host/v1/a@b");  // '@' in the path
  EXPECT_EQ(UrlForDisplay("no-scheme@host"), "no-scheme@host");
}

}  // namespace
}  // namespace sbx::llm
