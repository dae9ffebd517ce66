// The setup most integration tests share: a fresh PostgreSQL database, a devtime-collector
// process on it (authentication on), and the clients a test reaches it through: devtimectl
// as an operator would run it, and a gRPC stub as an agent would hold one.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "devtime/v1/collector.grpc.pb.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"

namespace devtime::testing {

// devtimectl against `collector`: `auth` (e.g. {"--token-file", path}, or none) then `args`.
CommandResult Ctl(const CollectorProcess& collector, const std::vector<std::string>& args,
                  const std::vector<std::string>& auth);

// A test with its own database and collector, both made before the test body and gone
// after it.
class CollectorFixture : public ::testing::Test {
 protected:
  // `collector_args` are passed to every start of the collector (see CollectorProcess).
  explicit CollectorFixture(std::vector<std::string> collector_args = {});

  // devtimectl `args` against collector_, as its admin.
  CommandResult Ctl(const std::vector<std::string>& args) const;
  // A stub for collector_ that sends the admin token.
  std::unique_ptr<v1::Collector::Stub> AdminStub() const;

  TestDatabase db_;
  CollectorProcess collector_;
};

}  // namespace devtime::testing
