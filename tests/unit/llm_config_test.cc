// Unit tests for LlmConfig: environment, flags, and the checks made before any request.
#include "src/llm/llm_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

namespace sbx::llm {
namespace {

constexpr char kKey[] = "sk-test-0123456789abcdef";

GetenvFunction Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string LoadError(std::map<std::string, std::string> vars, LlmConfigOverrides flags = {}) {
  auto config = LoadLlmConfig(Env(std::move(vars)), flags);
  EXPECT_FALSE(config);
  if (config) return "";
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(config.error().message.find(kKey), std::string::npos);
  return config.error().message;
}

TEST(LlmConfig, DefaultsWithAKey) {
  auto config = LoadLlmConfig(Env({{"OPENAI_API_KEY", kKey}}), {});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->base_url, "https://api.openai.com/v1");
  EXPECT_EQ(config->api_key, kKey);
  EXPECT_EQ(config->model, "gpt-4o-mini");
  EXPECT_EQ(config->connect_timeout_seconds, 10);
  EXPECT_EQ(config->request_timeout_seconds, 120);
  EXPECT_EQ(config->max_retries, 4);
}

TEST(LlmConfig, ReadsTheEnvironmentAndFlagsWin) {
  auto env = Env({{"OPENAI_API_KEY", kKey},
                  {"OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/"},
                  {"SBX_MODEL", "qwen2.5-coder"}});
  auto from_env = LoadLlmConfig(env, {});
  ASSERT_TRUE(from_env) << from_env.error().message;
  EXPECT_EQ(from_env->base_url, "http://127.0.0.1:8000/v1");  // trailing slash stripped
  EXPECT_EQ(from_env->model, "qwen2.5-coder");

  LlmConfigOverrides flags;
  flags.base_url = "https://openrouter.ai/api/v1//";
  flags.model = "llama-3.1-70b";
  flags.api_key = "other";
  auto overridden = LoadLlmConfig(env, flags);
  ASSERT_TRUE(overridden) << overridden.error().message;
  EXPECT_EQ(overridden->base_url, "https://openrouter.ai/api/v1");
  EXPECT_EQ(overridden->model, "llama-3.1-70b");
  EXPECT_EQ(overridden->api_key, "other");
}

TEST(LlmConfig, MissingKeyForOpenAiIsAnErrorBeforeAnyRequest) {
  const std::string expected =
      "OPENAI_API_KEY is not set; export it, or point OPENAI_BASE_URL at a server that needs no "
      "key";
  EXPECT_EQ(LoadError({}), expected);
  EXPECT_EQ(LoadError({{"OPENAI_API_KEY", ""}}), expected);  // empty counts as unset
  EXPECT_EQ(LoadError({{"OPENAI_API_KEY", " \n"}}), expected);
  EXPECT_EQ(LoadError({{"OPENAI_BASE_URL", "https://API.openai.com:443/v1"}}), expected);
}

TEST(LlmConfig, ALocalServerNeedsNoKey) {
  auto config = LoadLlmConfig(Env({{"OPENAI_BASE_URL", "http://localhost:11434/v1"}}), {});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(config->api_key.empty());
  LlmConfigOverrides flags;
  flags.base_url = "http://127.0.0.1:8080/v1";
  EXPECT_TRUE(LoadLlmConfig(Env({}), flags));
}

TEST(LlmConfig, BadUrlsNameTheirSourceAndTheFix) {
  std::string scheme = LoadError({{"OPENAI_BASE_URL", "ftp://example.com/v1"}});
  EXPECT_EQ(scheme.rfind("OPENAI_BASE_URL \"ftp://example.com/v1\" is not an http:// or https:// "
                         "URL; set it to the API root, like https://api.openai.com/v1",
                         0),
            0u)
      << scheme;
  LlmConfigOverrides flags;
  flags.base_url = "localhost:8000";
  EXPECT_EQ(LoadError({}, flags).rfind("--base-url \"localhost:8000\" is not an http://", 0), 0u);
  EXPECT_NE(LoadError({{"OPENAI_BASE_URL", "http:///v1"}}).find("has no host"), std::string::npos);
  EXPECT_NE(LoadError({{"OPENAI_BASE_URL", "http://h/v1/chat/completions"}})
                .find("names the endpoint, not the API root"),
            std::string::npos);
  EXPECT_NE(LoadError({{"OPENAI_BASE_URL", "http://h/ v1"}}).find("a space"), std::string::npos);
}

TEST(LlmConfig, AKeyWithAControlCharacterIsRefusedWithoutQuotingIt) {
  std::string message = LoadError({{"OPENAI_API_KEY", std::string(kKey) + "\r\nX-Evil: 1"}});
  EXPECT_EQ(message,
            "OPENAI_API_KEY contains a space or a control character; set it to the key "
            "alone");
}

TEST(LlmConfig, SurroundingWhitespaceIsTrimmed) {
  auto config = LoadLlmConfig(
      Env({{"OPENAI_API_KEY", std::string(" ") + kKey + "\n"}, {"SBX_MODEL", " gpt-4o\n"}}), {});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->api_key, kKey);
  EXPECT_EQ(config->model, "gpt-4o");
}

TEST(LlmConfig, ValidateChecksTheNumbers) {
  LlmConfig config;
  config.api_key = "k";
  EXPECT_TRUE(ValidateLlmConfig(config));
  auto expect_error = [&](LlmConfig bad, const std::string& field) {
    auto result = ValidateLlmConfig(bad);
    ASSERT_FALSE(result) << field;
    EXPECT_NE(result.error().message.find(field), std::string::npos) << result.error().message;
  };
  LlmConfig bad = config;
  bad.connect_timeout_seconds = 0;
  expect_error(bad, "connect_timeout_seconds");
  bad = config;
  bad.request_timeout_seconds = std::nan("");
  expect_error(bad, "request_timeout_seconds");
  bad = config;
  bad.max_retries = -1;
  expect_error(bad, "max_retries");
  bad = config;
  bad.backoff_max_seconds = 0.1;
  expect_error(bad, "backoff_max_seconds");
  bad = config;
  bad.model = "";
  expect_error(bad, "model");
  bad = config;
  bad.api_key = "";
  expect_error(bad, "api_key is not set");
}

}  // namespace
}  // namespace sbx::llm
