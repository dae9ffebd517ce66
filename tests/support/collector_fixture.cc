#include "tests/support/collector_fixture.h"

#include <utility>

#include "tests/support/collector_client.h"
#include "tests/support/files.h"
#include "tests/support/wait.h"

namespace devtime::testing {

CommandResult Ctl(const CollectorProcess& collector, const std::vector<std::string>& args,
                  const std::vector<std::string>& auth) {
  std::vector<std::string> argv{BinaryPath("devtimectl"), "--collector", collector.address()};
  argv.insert(argv.end(), auth.begin(), auth.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

CommandResult AgentCommand(const std::vector<std::string>& args) {
  std::vector<std::string> argv{BinaryPath("devtime-agent")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

CollectorFixture::CollectorFixture(std::vector<std::string> collector_args)
    : collector_(db_.conninfo(), 0, std::move(collector_args)) {}

CommandResult CollectorFixture::Ctl(const std::vector<std::string>& args) const {
  return devtime::testing::Ctl(collector_, args, {"--token-file", collector_.admin_token_file()});
}

CommandResult CollectorFixture::AgentUpload(const std::vector<std::string>& files) const {
  std::vector<std::string> args{"upload",
                                "--collector",
                                collector_.address(),
                                "--token-file",
                                collector_.admin_token_file(),
                                "--retry-for",
                                "5"};
  args.insert(args.end(), files.begin(), files.end());
  return AgentCommand(args);
}

std::unique_ptr<v1::Collector::Stub> CollectorFixture::AdminStub() const {
  return CollectorStub(collector_.address(), collector_.admin_token());
}

std::unique_ptr<Subprocess> CollectorFixture::RunAgent(const std::string& dir,
                                                       const std::string& name,
                                                       const std::string& extra_config) const {
  auto token = Ctl({"agents", "add", name, "--host", name});
  EXPECT_EQ(token.exit_code, 0) << token.err;
  std::string home = dir + "/" + name;
  std::string token_file = WriteFile(dir, name + ".token", token.out);
  std::string config = WriteFile(
      dir, name + ".yaml",
      "name: " + name + "\nhost: " + name + "\ntoken_file: " + token_file + "\nwork_dir: " + home +
          "/runs\nspool_dir: " + home + "/spool\nstate_dir: " + home + "/state\n" + extra_config);
  return std::make_unique<Subprocess>(
      std::vector<std::string>{BinaryPath("devtime-agent"), "run", "--config", config,
                               "--collector", collector_.address()},
      home + ".log");
}

bool CollectorFixture::WaitUntilAnalysed(const std::string& run_id) const {
  return WaitUntil([&] {
    return db_.Query("SELECT analyzed_at IS NOT NULL FROM runs WHERE run_id = '" + run_id + "'") ==
           "t";
  });
}

bool CollectorFixture::WaitUntilAllAnalysed() const {
  return WaitUntil(
      [&] { return db_.Query("SELECT count(*) FROM runs WHERE analyzed_at IS NULL") == "0"; });
}

void CollectorFixture::UploadAnalysed(const v1::RunSummary& run) {
  if (!uploader_) uploader_ = AdminStub();
  auto status = UploadRun(*uploader_, run);
  ASSERT_TRUE(status.ok()) << status.error_message() << collector_.Log();
  ASSERT_TRUE(WaitUntilAnalysed(run.identity().run_id()))
      << "run " << run.identity().run_id() << " was never analysed" << collector_.Log();
}

nlohmann::json CollectorFixture::ListRegressions(const std::string& filter) const {
  auto listed = Ctl({"regressions", "list", filter, "--format", "json"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  auto json = nlohmann::json::parse(listed.out, nullptr, false);
  return json.is_object() && json.contains("regressions") ? json["regressions"]
                                                          : nlohmann::json::array();
}

}  // namespace devtime::testing
