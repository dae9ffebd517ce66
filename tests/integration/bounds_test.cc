// What the collector accepts it can send, and what it holds is bounded (issue 11 items 3
// and 4): job fields and counts have limits, the largest allowed assignment reaches an agent
// through a real session, the lists are paged server-side (devtimectl follows the pages),
// and agent sessions are checked before anything is read, must say hello in time and are
// bounded per agent and in total. Real gRPC on loopback and a real PostgreSQL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "devtime/v1/collector.grpc.pb.h"
#include "proto/wire/channel.h"
#include "proto/wire/job_spec.h"
#include "services/collector/rpc/job_limits.h"
#include "services/collector/rpc/server.h"
#include "tests/support/collector_client.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/sample_runs.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace bounds {
namespace {

using ::testing::HasSubstr;
using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::CollectorMessage>;

v1::JobSpec SmallJob(const std::string& name) {
  v1::JobSpec job;
  job.set_name(name);
  job.set_model("llama");
  job.set_workload("train");
  job.set_command("python train.py --steps {steps}");
  job.mutable_schedule()->set_cron("0 2 * * *");
  return job;
}

// A job of exactly collector::kMaxJobBytes as stored (defaults filled), every field within
// its own limit: the largest job the collector accepts.
v1::JobSpec LargestJob(const std::string& name) {
  v1::JobSpec job = wire::WithDefaults(SmallJob(name));
  job.set_command(std::string(collector::kMaxCommandBytes, 'c'));
  auto& env = *job.mutable_env();
  for (int i = 0; job.ByteSizeLong() + collector::kMaxEnvValueBytes + 32 < collector::kMaxJobBytes;
       ++i) {
    env["PAD_" + std::to_string(i)] = std::string(collector::kMaxEnvValueBytes, 'v');
  }
  env["PAD"] = "";
  // The last value's length, until the varints around it settle.
  for (int tries = 0; tries < 8 && job.ByteSizeLong() != collector::kMaxJobBytes; ++tries) {
    long grow = static_cast<long>(collector::kMaxJobBytes) - static_cast<long>(job.ByteSizeLong());
    env["PAD"].resize(static_cast<std::size_t>(static_cast<long>(env["PAD"].size()) + grow), 'v');
  }
  return job;
}

grpc::Status Apply(v1::Collector::Stub& stub, const std::vector<v1::JobSpec>& jobs) {
  v1::ApplyJobsRequest request;
  for (const auto& job : jobs) *request.add_jobs() = job;
  v1::ApplyJobsResponse response;
  auto context = wire::MakeContext(std::chrono::seconds(60));
  return stub.ApplyJobs(context.get(), request, &response);
}

// Issues agent `name` (host `name`) a token through the collector at `address`.
std::string AgentToken(const std::string& address, const std::string& admin_token,
                       const std::string& name) {
  auto admin = testing::CollectorStub(address, admin_token);
  v1::AddAgentRequest request;
  request.set_name(name);
  request.set_host(name);
  v1::AddAgentResponse response;
  auto context = wire::MakeContext(std::chrono::seconds(30));
  EXPECT_TRUE(admin->AddAgent(context.get(), request, &response).ok());
  return response.token();
}

// ---- item 3: what the collector accepts it can send ---------------------------------------

class JobBoundsTest : public testing::CollectorFixture {};

TEST_F(JobBoundsTest, ApplyRefusesMoreJobsThanOneAssignmentHolds) {
  auto admin = AdminStub();
  std::vector<v1::JobSpec> jobs;
  for (std::size_t i = 0; i <= collector::kMaxJobs; ++i) {
    jobs.push_back(SmallJob("job-" + std::to_string(i)));
  }
  grpc::Status one_too_many = Apply(*admin, jobs);
  EXPECT_EQ(one_too_many.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(one_too_many.error_message(), HasSubstr("at most 500"));
  EXPECT_EQ(db_.Count("jobs"), 0);

  // The bound holds for what is stored, not only per request.
  jobs.pop_back();
  ASSERT_TRUE(Apply(*admin, jobs).ok());
  grpc::Status one_more = Apply(*admin, {SmallJob("one-more")});
  EXPECT_EQ(one_more.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(one_more.error_message(), HasSubstr("501 would be stored, at most 500"));
  EXPECT_EQ(db_.Count("jobs"), static_cast<long long>(collector::kMaxJobs));
  EXPECT_TRUE(Apply(*admin, {SmallJob("job-7")}).ok()) << "updating a stored job stays allowed";
}

TEST_F(JobBoundsTest, ApplyNamesTheFieldOrLimitAJobExceeds) {
  auto admin = AdminStub();
  struct Case {
    const char* what;
    std::function<void(v1::JobSpec&)> spoil;
    grpc::StatusCode code;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"a 10 MiB command", [](v1::JobSpec& j) { j.set_command(std::string(10 << 20, 'x')); },
       grpc::StatusCode::INVALID_ARGUMENT, "jobs[0].command: 10485760 bytes, at most 16384"},
      {"a long model", [](v1::JobSpec& j) { j.set_model(std::string(300, 'm')); },
       grpc::StatusCode::INVALID_ARGUMENT, "jobs[0].model: 300 bytes, at most 256"},
      {"too many env entries",
       [](v1::JobSpec& j) {
         for (int i = 0; i < 129; ++i) (*j.mutable_env())["K" + std::to_string(i)] = "v";
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "jobs[0].env: 129 entries, at most 128"},
      {"too many selector hosts",
       [](v1::JobSpec& j) {
         for (int i = 0; i < 513; ++i) j.mutable_selector()->add_hosts("h" + std::to_string(i));
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "jobs[0].selector.hosts: 513 hosts, at most 512"},
      {"a selector over its size",
       [](v1::JobSpec& j) {
         for (int i = 0; i < 100; ++i) j.mutable_selector()->add_hosts(std::string(250, 'h'));
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "jobs[0].selector: 25"},
      {"a job over its size, every field within its own",
       [](v1::JobSpec& j) {
         for (int i = 0; i < 10; ++i)
           (*j.mutable_env())["K" + std::to_string(i)] = std::string(4000, 'v');
       },
       grpc::StatusCode::RESOURCE_EXHAUSTED, "per job"},
  };
  for (const Case& c : cases) {
    v1::JobSpec job = SmallJob("spoiled");
    c.spoil(job);
    grpc::Status status = Apply(*admin, {job});
    EXPECT_EQ(status.error_code(), c.code) << c.what << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.message)) << c.what;
  }
  EXPECT_EQ(db_.Count("jobs"), 0);
}

// The bounds' product fits the session's message limit (static_assert in job_limits.cc);
// this sends the largest allowed assignment through a real session to prove it.
TEST_F(JobBoundsTest, TheLargestAllowedAssignmentReachesAnAgent) {
  auto admin = AdminStub();
  std::vector<v1::JobSpec> jobs;
  for (std::size_t i = 0; i < collector::kMaxJobs; ++i) {
    jobs.push_back(LargestJob("big-" + std::to_string(1000 + i)));
  }
  ASSERT_EQ(jobs.front().ByteSizeLong(), collector::kMaxJobBytes);
  ASSERT_TRUE(Apply(*admin, jobs).ok());

  auto stub = testing::CollectorStub(
      collector_.address(), AgentToken(collector_.address(), collector_.admin_token(), "agent-a"));
  auto context = wire::MakeContext(std::chrono::seconds(60));
  std::unique_ptr<Stream> stream = stub->AgentSession(context.get());
  v1::AgentMessage hello;
  hello.mutable_hello()->mutable_identity()->set_name("agent-a");
  hello.mutable_hello()->mutable_identity()->set_host("agent-a");
  ASSERT_TRUE(stream->Write(hello));
  v1::CollectorMessage message;
  // The hub may push the jobs it knew before the apply first; the apply's push follows.
  do {
    ASSERT_TRUE(stream->Read(&message)) << stream->Finish().error_message();
  } while (message.assignments().jobs_size() == 0);
  EXPECT_EQ(message.assignments().jobs_size(), static_cast<int>(collector::kMaxJobs));
  EXPECT_GT(message.ByteSizeLong(), 16'000'000u);
  context->TryCancel();
  while (stream->Read(&message)) {
  }
  (void)stream->Finish();

  // And an operator can still list them: pages of at most 4 MiB.
  auto listed = Ctl({"jobs", "list", "--format", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("\"big-1499\""));
}

// ---- item 3: server-side pages ------------------------------------------------------------

class PagingTest : public testing::CollectorFixture {};

TEST_F(PagingTest, JobsAreListedInPagesWhichCtlFollows) {
  auto admin = AdminStub();
  std::vector<v1::JobSpec> jobs;
  for (int i = 0; i < 250; ++i) jobs.push_back(SmallJob("job-" + std::to_string(1000 + i)));
  ASSERT_TRUE(Apply(*admin, jobs).ok());

  std::vector<std::string> names;
  v1::ListJobsRequest request;
  int pages = 0;
  do {
    v1::ListJobsResponse page;
    auto context = wire::MakeContext(std::chrono::seconds(30));
    ASSERT_TRUE(admin->ListJobs(context.get(), request, &page).ok());
    EXPECT_LE(page.jobs_size(), 100);
    for (const auto& job : page.jobs()) names.push_back(job.spec().name());
    request.set_page_token(page.next_page_token());
    ++pages;
  } while (!request.page_token().empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(names.size(), 250u);
  EXPECT_EQ(names.front(), "job-1000");
  EXPECT_EQ(names.back(), "job-1249");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), 250u);

  auto listed = Ctl({"jobs", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("job-1000"));
  EXPECT_THAT(listed.out, HasSubstr("job-1249"));
}

TEST_F(PagingTest, RunsWithTheSameStartArePagedWithoutRepeatsOrGaps) {
  auto admin = AdminStub();
  for (int i = 1; i <= 7; ++i) {
    ASSERT_TRUE(testing::UploadRun(*admin, testing::NaiveRmsNormRun(testing::TestRunId(i))).ok());
  }
  std::set<std::string> seen;
  v1::ListRunsRequest request;
  request.set_page_size(3);
  int pages = 0;
  do {
    v1::ListRunsResponse page;
    auto context = wire::MakeContext(std::chrono::seconds(30));
    ASSERT_TRUE(admin->ListRuns(context.get(), request, &page).ok());
    for (const auto& run : page.runs()) {
      EXPECT_TRUE(seen.insert(run.identity().run_id()).second) << "repeated";
    }
    request.set_page_token(page.next_page_token());
    ++pages;
  } while (!request.page_token().empty() && pages < 10);
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(pages, 3);

  auto two = Ctl({"runs", "list", "--limit", "2"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_THAT(two.out, HasSubstr(testing::TestRunId(1)));
  EXPECT_THAT(two.out, HasSubstr(testing::TestRunId(2)));
  EXPECT_THAT(two.out, ::testing::Not(HasSubstr(testing::TestRunId(3))));
}

TEST_F(PagingTest, JobHistoryIsPagedAndCtlFollowsItsLimit) {
  auto admin = AdminStub();
  ASSERT_TRUE(Apply(*admin, {SmallJob("nightly")}).ok());
  db_.Query(
      "INSERT INTO job_slots (job, slot_time, host, outcome)"
      " SELECT 'nightly', timestamptz '2026-11-01' + (n / 3) * interval '1 day',"
      " 'host-' || (n % 3), 'succeeded' FROM generate_series(0, 149) n");
  v1::JobHistoryRequest request;
  request.set_name("nightly");
  v1::JobHistoryResponse first;
  {
    auto context = wire::MakeContext(std::chrono::seconds(30));
    ASSERT_TRUE(admin->JobHistory(context.get(), request, &first).ok());
  }
  EXPECT_EQ(first.slots_size(), 50);
  ASSERT_FALSE(first.next_page_token().empty());

  auto all = Ctl({"jobs", "history", "nightly", "--limit", "0", "--format", "json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::size_t rows = 0;
  for (std::size_t at = all.out.find("\"slot_time\""); at != std::string::npos;
       at = all.out.find("\"slot_time\"", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 150u);
}

TEST_F(PagingTest, ATokenOfAnotherListOrPageSizeOverTheMaxIsRefused) {
  auto admin = AdminStub();
  v1::ListRegressionsRequest request;
  request.set_page_token("bm90IGEgdG9rZW4");
  v1::ListRegressionsResponse response;
  auto context = wire::MakeContext(std::chrono::seconds(30));
  grpc::Status bad_token = admin->ListRegressions(context.get(), request, &response);
  EXPECT_EQ(bad_token.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad_token.error_message(), HasSubstr("page_token"));

  v1::ListRunsRequest runs;
  runs.set_page_size(10'001);
  v1::ListRunsResponse listed;
  auto again = wire::MakeContext(std::chrono::seconds(30));
  grpc::Status too_big = admin->ListRuns(again.get(), runs, &listed);
  EXPECT_EQ(too_big.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(too_big.error_message(), HasSubstr("page_size: 10001, at most 10000"));
}

// ---- item 4: bounded sessions -------------------------------------------------------------

// One agent session (agent = host = `agent`) as a plain stream with a deadline of its own;
// `hello` false sends nothing at all.
class Session {
 public:
  Session(const std::string& address, const std::string& agent, const std::string& token,
          bool hello, std::chrono::seconds deadline)
      : stub_(testing::CollectorStub(address, token)),
        context_(wire::MakeContext(deadline)),
        stream_(stub_->AgentSession(context_.get())) {
    if (!hello) return;
    v1::AgentMessage message;
    message.mutable_hello()->mutable_identity()->set_name(agent);
    message.mutable_hello()->mutable_identity()->set_host(agent);
    stream_->Write(message);
  }
  ~Session() {
    context_->TryCancel();
    End();
  }

  // True when the collector pushed the assignments: the session holds its seat.
  bool Joined() {
    v1::CollectorMessage message;
    return !end_ && stream_->Read(&message) && message.has_assignments();
  }
  // How the collector ended the session (reads until it does).
  grpc::Status End() {
    if (!end_) {
      v1::CollectorMessage message;
      while (stream_->Read(&message)) {
      }
      end_ = stream_->Finish();
    }
    return *end_;
  }
  void Cancel() { context_->TryCancel(); }

 private:
  std::unique_ptr<v1::Collector::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<Stream> stream_;
  std::optional<grpc::Status> end_;
};

// Sessions of one collector.
class Sessions {
 public:
  explicit Sessions(std::string address) : address_(std::move(address)) {}

  std::unique_ptr<Session> Open(const std::string& agent, const std::string& token,
                                bool hello = true) const {
    return std::make_unique<Session>(address_, agent, token, hello, std::chrono::seconds(20));
  }

  // A session of `agent` that holds its seat, retried while the collector has not yet
  // noticed that an earlier session ended (its places come back in OnDone, just after);
  // nullptr when none joins within the wait.
  std::unique_ptr<Session> Join(const std::string& agent, const std::string& token) const {
    std::unique_ptr<Session> joined;
    bool ok = testing::WaitUntil([&] {
      joined = Open(agent, token);
      return joined->Joined();
    });
    if (!ok) ADD_FAILURE() << agent << " never joined: " << joined->End().error_message();
    return ok ? std::move(joined) : nullptr;
  }

 private:
  std::string address_;
};

// The collector as operators run it: the default bounds (10 s for the hello, 4 sessions per
// agent).
class SessionBoundsTest : public testing::CollectorFixture {
 protected:
  std::string AgentToken(const std::string& name) const {
    return bounds::AgentToken(collector_.address(), collector_.admin_token(), name);
  }
  Sessions sessions_{collector_.address()};
};

TEST_F(SessionBoundsTest, AStreamWithoutAValidTokenIsRefusedBeforeItSaysAnything) {
  for (const std::string& token : {std::string(), std::string("dt_not-a-token-issued")}) {
    auto session = sessions_.Open("agent-a", token, /*hello=*/false);
    auto start = std::chrono::steady_clock::now();
    grpc::Status status = session->End();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << "token '" << token << "': " << status.error_message();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
}

TEST_F(SessionBoundsTest, ASessionThatNeverSaysHelloIsClosedAtTheHelloDeadline) {
  auto start = std::chrono::steady_clock::now();
  grpc::Status status = sessions_.Open("agent-a", AgentToken("agent-a"), /*hello=*/false)->End();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("hello: none within 10000 ms"));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(9));
}

TEST_F(SessionBoundsTest, AnAgentsSessionsBeyondItsBoundAreRefused) {
  std::string token = AgentToken("agent-a");
  std::vector<std::unique_ptr<Session>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(sessions_.Join("agent-a", token));
    ASSERT_TRUE(held.back());
  }
  grpc::Status fifth = sessions_.Open("agent-a", token)->End();
  EXPECT_EQ(fifth.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(fifth.error_message(), HasSubstr("holds 4 sessions on this collector, its limit "
                                               "(--max-sessions-per-agent)"));
  EXPECT_TRUE(sessions_.Join("agent-b", AgentToken("agent-b"))) << "other agents still join";

  held.front()->Cancel();  // its places come back once the collector sees it end
  held.front()->End();
  EXPECT_TRUE(sessions_.Join("agent-a", token));
}

// A collector in this process with a total bound of 3 sessions, so that a test reaches it.
class SessionTotalBoundTest : public ::testing::Test {
 protected:
  static constexpr char kAdminToken[] = "bounds-test-admin-token-0123456789";

  void SetUp() override {
    collector::ServerOptions options;
    options.store.conninfo = db_.conninfo();
    options.grpc_listen = "127.0.0.1:0";
    options.metrics_listen = "127.0.0.1:0";
    options.admin_token = kAdminToken;
    options.session.max_sessions = 3;
    auto server = collector::CollectorServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    address_ = "127.0.0.1:" + std::to_string(server_->grpc_port());
  }

  testing::TestDatabase db_;
  std::unique_ptr<collector::CollectorServer> server_;
  std::string address_;
};

TEST_F(SessionTotalBoundTest, SessionsBeyondTheTotalAreRefusedBeforeTheirTokenIsChecked) {
  Sessions sessions(address_);
  std::vector<std::unique_ptr<Session>> held;
  std::string a = AgentToken(address_, kAdminToken, "agent-a");
  held.push_back(sessions.Join("agent-a", a));
  for (const char* agent : {"agent-b", "agent-c"}) {
    held.push_back(sessions.Join(agent, AgentToken(address_, kAdminToken, agent)));
  }
  ASSERT_TRUE(held[0] && held[1] && held[2]);
  for (const std::string& token : {a, std::string()}) {
    grpc::Status fourth = sessions.Open("agent-a", token)->End();
    EXPECT_EQ(fourth.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(fourth.error_message(), HasSubstr("holds 3, its limit (--max-agent-sessions)"));
  }
  held.front()->Cancel();
  held.front()->End();
  EXPECT_TRUE(sessions.Join("agent-a", a));
}

}  // namespace
}  // namespace bounds
}  // namespace devtime
