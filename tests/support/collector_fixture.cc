#include "tests/support/collector_fixture.h"

#include <utility>

#include "tests/support/collector_client.h"

namespace devtime::testing {

CommandResult Ctl(const CollectorProcess& collector, const std::vector<std::string>& args,
                  const std::vector<std::string>& auth) {
  std::vector<std::string> argv{BinaryPath("devtimectl"), "--collector", collector.address()};
  argv.insert(argv.end(), auth.begin(), auth.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

CollectorFixture::CollectorFixture(std::vector<std::string> collector_args)
    : collector_(db_.conninfo(), 0, std::move(collector_args)) {}

CommandResult CollectorFixture::Ctl(const std::vector<std::string>& args) const {
  return devtime::testing::Ctl(collector_, args, {"--token-file", collector_.admin_token_file()});
}

std::unique_ptr<v1::Collector::Stub> CollectorFixture::AdminStub() const {
  return CollectorStub(collector_.address(), collector_.admin_token());
}

}  // namespace devtime::testing
