// The setup most integration tests share: a fresh PostgreSQL database, a devtime-collector
// process on it (authentication on), and the clients a test reaches it through: devtimectl
// as an operator would run it, a gRPC stub as an uploader would hold one, and devtime-agent
// daemons.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "devtime/v1/collector.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/support/process.h"
#include "tests/support/test_database.h"

namespace devtime::testing {

// devtimectl against `collector`: `auth` (e.g. {"--token-file", path}, or none) then `args`.
CommandResult Ctl(const CollectorProcess& collector, const std::vector<std::string>& args,
                  const std::vector<std::string>& auth);

// A one-shot devtime-agent command (summarize, upload) with `args`, as a user runs it.
CommandResult AgentCommand(const std::vector<std::string>& args);

// A test with its own database and collector, both made before the test body and gone
// after it.
class CollectorFixture : public ::testing::Test {
 protected:
  // `collector_args` are passed to every start of the collector (see CollectorProcess).
  explicit CollectorFixture(std::vector<std::string> collector_args = {});

  // devtimectl `args` against collector_, as its admin.
  CommandResult Ctl(const std::vector<std::string>& args) const;
  // `devtime-agent upload` of the run files `files` to collector_ as its admin, retrying for
  // 5 s.
  CommandResult AgentUpload(const std::vector<std::string>& files) const;
  // A stub for collector_ that sends the admin token.
  std::unique_ptr<v1::Collector::Stub> AdminStub() const;
  // Issues agent `name` (host `name`) a token and starts `devtime-agent run` against
  // collector_ with its files under `dir`: name.token, name.yaml (name, host, token_file,
  // work/spool/state dirs under dir/name, then the lines `extra_config`), log in name.log.
  std::unique_ptr<Subprocess> RunAgent(const std::string& dir, const std::string& name,
                                       const std::string& extra_config) const;

  // Detection is off the ack path (the analysis queue): true once the collector judged
  // run `run_id`, or every stored run; false when it does not within the wait's deadline.
  bool WaitUntilAnalysed(const std::string& run_id) const;
  bool WaitUntilAllAnalysed() const;

  // Uploads `run` as the admin and waits until the collector judged it, as a night does
  // before the next one arrives (fails the test when either does not happen).
  void UploadAnalysed(const v1::RunSummary& run);
  // `devtimectl regressions list <filter> --format json`: the regressions it lists, [] (and
  // a failure) when devtimectl fails.
  nlohmann::json ListRegressions(const std::string& filter = "--all") const;

  TestDatabase db_;
  CollectorProcess collector_;

 private:
  std::unique_ptr<v1::Collector::Stub> uploader_;  // made by the first UploadAnalysed
};

}  // namespace devtime::testing
