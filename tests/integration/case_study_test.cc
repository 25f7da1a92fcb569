// The seed case study end to end: a freshly generated energy dataset with events planted at
// random times, the demo's scripted conversation served by a real loopback server that
// speaks the OpenAI protocol and injects faults, the real client, agent loop and sandbox.
// Also the code-block mode with human approval, against the same server.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "sandbox_fixture.h"
#include "src/agent/agent.h"
#include "src/agent/scripted_model.h"
#include "src/executor/executors.h"
#include "src/llm/openai_client.h"
#include "tests/support/chat_completion_body.h"
#include "tests/support/fake_openai_server.h"

namespace sbx::agent {
namespace {

using nlohmann::json;
using sbx::testing::FakeOpenAiServer;
using sbx::testing::FakeResponse;
using sbx::testing::ReadHostFile;
using sbx::testing::ScratchDir;

std::string DemoFile(const std::string& name) { return std::string(SBX_SOURCE_DIR) + "/tools/demo/" + name; }

// Everything a test needs to run the agent on a real session against `server`.
struct AgentRig {
  ScratchDir host;
  std::unique_ptr<executor::SessionExecutor> session;
  std::unique_ptr<llm::OpenAiClient> client;
  std::vector<std::string> retries;

  AgentRig(FakeOpenAiServer& server, executor::ExecutorOptions options) {
    options.image_dir = sbx::testing::TestImage();
    auto created = executor::SessionExecutor::Create(std::move(options));
    EXPECT_TRUE(created) << created.error().ToString();
    if (created) session = std::move(*created);
    llm::LlmConfig config;
    config.base_url = server.base_url();
    config.api_key = "sk-case-study";
    config.request_timeout_seconds = 1;  // the slow reply below takes longer
    config.backoff_initial_seconds = 0.05;
    llm::OpenAiClientOptions client_options;
    client_options.on_retry = [this](const std::string& note) { retries.push_back(note); };
    client = std::make_unique<llm::OpenAiClient>(config, client_options);
  }

  AgentResult Run(AgentConfig config, Approver& approver) {
    ToolRunner tools(*session, approver, 16 * 1024);
    AgentSession agent_session{tools, [this](const std::vector<std::string>& requests, const std::string& dir) {
                                 return session->CopyOutputs(requests, dir);
                               }};
    config.output_dir = host.path() + "/out";
    ::mkdir(config.output_dir.c_str(), 0755);
    Transcript transcript;
    EXPECT_TRUE(Transcript::Open(transcript, host.path() + "/transcript.jsonl"));
    return RunAgent(*client, agent_session, config, transcript);
  }
};

// The dataset's seed: $SBX_TEST_SEED to replay a run, else a fresh one. Logged either way, and
// named in every failure, so a failing dataset can be regenerated.
int DatasetSeed() {
  const char* fixed = std::getenv("SBX_TEST_SEED");
  const int seed = fixed != nullptr && *fixed != '\0'
                       ? std::atoi(fixed)
                       : static_cast<int>(std::random_device{}() % 100000);
  std::printf("dataset seed %d (SBX_TEST_SEED=%d replays it)\n", seed, seed);
  ::testing::Test::RecordProperty("dataset_seed", seed);
  return seed;
}

TEST(CaseStudy, FindsThePlantedEventsThroughAFaultyServer) {
  const int seed = DatasetSeed();
  SCOPED_TRACE("dataset seed " + std::to_string(seed));
  ScratchDir data;
  auto generated = sbx::testing::RunOnHost({"/usr/bin/python3", DemoFile("make_energy_data.py"),
                                            data.path() + "/energy.csv", "--seed", std::to_string(seed),
                                            "--events-json", data.path() + "/planted.json"});
  ASSERT_EQ(generated.exit_code, 0) << generated.output;
  json planted = json::parse(ReadHostFile(data.path() + "/planted.json"));
  // The generator's four kinds, one event each: fewer would let the checks below pass on less.
  ASSERT_EQ(planted.size(), 4u) << planted.dump();

  // The demo's scripted replies, in wire form, with a fault before each of the middle ones.
  json script = json::parse(ReadHostFile(DemoFile("scripted_model.json")));
  std::vector<FakeResponse> faults = {
      FakeResponse::Json(429, R"({"error": {"message": "rate limited"}})").WithHeader("Retry-After", "1"),
      FakeResponse::Json(500, R"({"error": {"message": "internal error"}})"),
      FakeResponse::Json(200, sbx::testing::TextCompletionBody("too late")).WithDelay(2500),
      FakeResponse::Json(200, R"({"choices": [{"message": {"content": "cut)"),
      FakeResponse::Hangup(),
  };
  FakeOpenAiServer server;
  for (size_t i = 0; i < script["replies"].size(); ++i) {
    if (i >= 1 && i - 1 < faults.size()) server.Enqueue(faults[i - 1]);
    json message = script["replies"][i];
    server.Enqueue(FakeResponse::Json(
        200, json({{"id", "r" + std::to_string(i)},
                   {"choices", json::array({{{"index", 0}, {"message", message}, {"finish_reason", "stop"}}})},
                   {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 50}, {"total_tokens", 150}}}})
                 .dump()));
  }
  ASSERT_TRUE(server.Start());

  executor::ExecutorOptions options;
  options.manifest.AddHostFile("input/energy.csv", data.path() + "/energy.csv");
  AgentRig rig(server, std::move(options));
  ASSERT_TRUE(rig.session);
  auto approver = MakeApprover(ApprovalMode::kNever, stdin, stderr).value();
  AgentConfig config;
  config.model = "case-study";
  config.task = ReadHostFile(DemoFile("task.md"));
  config.input_files = {"input/energy.csv"};
  config.expected_outputs = {"output/anomalies.csv", "output/energy_anomalies.png", "output/anomaly_report.md"};
  AgentResult result = rig.Run(config, *approver);

  EXPECT_EQ(result.end, AgentEnd::kFinalAnswer) << result.error;
  EXPECT_EQ(result.executions, 6);
  EXPECT_TRUE(result.missing_outputs.empty());
  EXPECT_EQ(result.usage.total_tokens, 150 * static_cast<int64_t>(script["replies"].size()));
  EXPECT_EQ(rig.retries.size(), faults.size()) << "each fault was retried once";
  EXPECT_EQ(server.unused_responses(), 0u);

  const std::string out = rig.host.path() + "/out/output/";
  std::string png = ReadHostFile(out + "energy_anomalies.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::string csv = ReadHostFile(out + "anomalies.csv");
  std::string report = ReadHostFile(out + "anomaly_report.md");
  for (unsigned char c : report) EXPECT_LT(c, 128) << "the report is plain ASCII";
  // Every planted event appears in the CSV and the report by its start hour (the detector
  // may widen an event by an hour, so the planted start or the hour before it).
  for (const auto& event : planted) {
    std::string start = event["start"];  // "YYYY-MM-DD HH:MM:SS"
    std::tm tm{};
    ::strptime(start.c_str(), "%Y-%m-%d %H:%M:%S", &tm);
    std::time_t t = ::timegm(&tm);
    bool in_csv = false, in_report = false;
    for (std::time_t candidate : {t, t - 3600}) {
      char csv_key[32], report_key[32];
      std::strftime(csv_key, sizeof csv_key, "%Y-%m-%d %H:%M:%S", std::gmtime(&candidate));
      std::strftime(report_key, sizeof report_key, "%Y-%m-%d %H:%M", std::gmtime(&candidate));
      in_csv = in_csv || csv.find(csv_key) != std::string::npos;
      in_report = in_report || report.find(report_key) != std::string::npos;
    }
    EXPECT_TRUE(in_csv) << event.dump() << "\n" << csv;
    EXPECT_TRUE(in_report) << event.dump() << "\n" << report;
  }
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + static_cast<long>(planted.size())) << csv;
  EXPECT_EQ(ReadHostFile(rig.host.path() + "/transcript.jsonl").find("sk-case-study"), std::string::npos);
}

TEST(CaseStudy, CodeBlockModeWithApprovalRunsOnlyWhatThePersonAllows) {
  FakeOpenAiServer server;
  server.Enqueue(FakeResponse::Json(200, sbx::testing::TextCompletionBody(
      "First a look:\n```python\nimport os\nopen('seen.txt', 'w').write('yes')\nprint(sorted(os.listdir('.')))\n```\n")));
  server.Enqueue(FakeResponse::Json(200, sbx::testing::TextCompletionBody(
      "Now clean up:\n```bash\nrm -rf /workspace/*\n```\n")));
  server.Enqueue(FakeResponse::Json(200, sbx::testing::TextCompletionBody("Understood, leaving it. TERMINATE")));
  ASSERT_TRUE(server.Start());
  AgentRig rig(server, executor::ExecutorOptions{});
  ASSERT_TRUE(rig.session);
  FILE* answers = std::tmpfile();
  std::fputs("y\nplease do not delete anything\n", answers);
  std::rewind(answers);
  FILE* shown = std::tmpfile();
  auto approver = MakeApprover(ApprovalMode::kAlways, answers, shown, /*allow_non_terminal=*/true).value();
  AgentConfig config;
  config.mode = AgentMode::kText;
  config.task = "Look around.";
  config.expected_outputs = {"seen.txt"};
  AgentResult result = rig.Run(config, *approver);
  EXPECT_EQ(result.end, AgentEnd::kFinalAnswer) << result.error;
  EXPECT_EQ(result.executions, 1);
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  std::string second = requests[1].JsonBody()["messages"].back()["content"];
  EXPECT_NE(second.find("seen.txt"), std::string::npos) << second;
  std::string third = requests[2].JsonBody()["messages"].back()["content"];
  EXPECT_NE(third.find("refused"), std::string::npos) << third;
  EXPECT_NE(third.find("please do not delete anything"), std::string::npos) << third;
  EXPECT_EQ(ReadHostFile(rig.host.path() + "/out/seen.txt"), "yes");  // the refused rm never ran
  std::rewind(shown);
  char buffer[4096] = {};
  size_t n = std::fread(buffer, 1, sizeof buffer - 1, shown);
  EXPECT_NE(std::string(buffer, n).find("rm -rf /workspace/*"), std::string::npos) << "the code was shown";
  std::fclose(answers);
  std::fclose(shown);
}

}  // namespace
}  // namespace sbx::agent
