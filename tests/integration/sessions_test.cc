// Agent sessions at fleet scale: changes are pushed across collectors (NOTIFY/LISTEN), idle
// sessions cost neither threads nor transactions, and a replaced or revoked agent token stops
// working within the token cache's TTL, open sessions included (issue 26). Sessions here are
// raw gRPC streams (the callback client API), so one test process holds hundreds of them
// without a thread each.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "devtime/v1/collector.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/wire/exit_codes.h"
#include "tests/support/collector_client.h"
#include "tests/support/collector_fixture.h"
#include "tests/support/process.h"
#include "tests/support/test_database.h"
#include "tests/support/wait.h"

namespace devtime {
namespace {

using devtime::testing::CollectorProcess;
using devtime::testing::TestDatabase;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// testing::WaitUntil with this file's patience (sessions deliver within milliseconds).
bool WaitFor(const std::function<bool()>& condition,
             std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  return devtime::testing::WaitUntil(condition, timeout, std::chrono::milliseconds(20));
}

// One agent's session as a bare stream: sends its hello, then records what it is pushed.
class FakeAgent final : public grpc::ClientBidiReactor<v1::AgentMessage, v1::CollectorMessage> {
 public:
  FakeAgent(v1::Collector::Stub& stub, const std::string& name, const std::string& host,
            const std::string& token) {
    context_.AddMetadata("authorization", "Bearer " + token);
    auto* identity = hello_.mutable_hello()->mutable_identity();
    identity->set_name(name);
    identity->set_host(host);
    identity->set_instance_type("trn1.32xlarge");
    stub.async()->AgentSession(&context_, this);
    StartWrite(&hello_);
    StartRead(&in_);
    StartCall();
  }
  ~FakeAgent() override {
    context_.TryCancel();
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return done_; });
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    {
      std::lock_guard lock(mu_);
      if (in_.has_assignments()) {
        assignments_ = in_.assignments();
        ++assignment_pushes_;
      }
      if (in_.has_run_now()) run_now_.push_back({in_.run_now(), Clock::now()});
    }
    changed_.notify_all();
    StartRead(&in_);
  }
  void OnDone(const grpc::Status& status) override {
    std::lock_guard lock(mu_);
    done_ = true;
    status_ = status;
    changed_.notify_all();
  }

  struct RunNow {
    v1::RunNowRequest request;
    Clock::time_point at;
  };
  int assignment_pushes() {
    std::lock_guard lock(mu_);
    return assignment_pushes_;
  }
  bool Assigned(const std::string& job) {
    std::lock_guard lock(mu_);
    for (const auto& spec : assignments_.jobs()) {
      if (spec.name() == job) return true;
    }
    return false;
  }
  std::vector<RunNow> run_now() {
    std::lock_guard lock(mu_);
    return run_now_;
  }
  // Whether it received run-now request `request_id`.
  bool GotRunNow(int64_t request_id) {
    std::lock_guard lock(mu_);
    for (const auto& r : run_now_) {
      if (r.request.request_id() == request_id) return true;
    }
    return false;
  }
  // Whether the latest run-now request it received is `request_id`.
  bool LastRunNowIs(int64_t request_id) {
    std::lock_guard lock(mu_);
    return !run_now_.empty() && run_now_.back().request.request_id() == request_id;
  }
  bool done() {
    std::lock_guard lock(mu_);
    return done_;
  }
  grpc::Status status() {
    std::lock_guard lock(mu_);
    return status_;
  }

 private:
  grpc::ClientContext context_;
  v1::AgentMessage hello_;
  v1::CollectorMessage in_;
  std::mutex mu_;
  std::condition_variable changed_;
  v1::Assignments assignments_;  // guarded by mu_
  int assignment_pushes_ = 0;    // guarded by mu_
  std::vector<RunNow> run_now_;  // guarded by mu_
  bool done_ = false;            // guarded by mu_
  grpc::Status status_;          // guarded by mu_
};

// A channel of its own (a separate HTTP/2 connection) for a group of sessions.
std::unique_ptr<v1::Collector::Stub> RawStub(const std::string& address, int group) {
  grpc::ChannelArguments args;
  args.SetInt("devtime.test.connection", group);  // distinct args: no shared subchannel
  return v1::Collector::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

v1::JobSpec Job(const std::string& name) {
  v1::JobSpec job;
  job.set_name(name);
  job.set_model("mlp");
  job.set_workload("train");
  job.set_command("true");
  job.mutable_schedule()->set_cron("0 2 * * *");
  return job;
}

// `method` of the admin stub on `request`: the response, and a failure of the test when the
// call fails.
template <typename Request, typename Response>
Response Call(grpc::Status (v1::Collector::Stub::*method)(grpc::ClientContext*, const Request&,
                                                          Response*),
              v1::Collector::Stub& admin, const Request& request) {
  grpc::ClientContext context;
  Response response;
  auto status = (admin.*method)(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

void Apply(v1::Collector::Stub& admin, const v1::JobSpec& job) {
  v1::ApplyJobsRequest request;
  *request.add_jobs() = job;
  Call(&v1::Collector::Stub::ApplyJobs, admin, request);
}

int64_t RunNow(v1::Collector::Stub& admin, const std::string& job, const std::string& host) {
  v1::RunJobNowRequest request;
  request.set_name(job);
  request.set_host(host);
  return Call(&v1::Collector::Stub::RunJobNow, admin, request).request_id();
}

std::string AddAgent(v1::Collector::Stub& admin, const std::string& name, const std::string& host) {
  v1::AddAgentRequest request;
  request.set_name(name);
  request.set_host(host);
  return Call(&v1::Collector::Stub::AddAgent, admin, request).token();
}

grpc::StatusCode ListJobsAs(const std::string& address, const std::string& token) {
  auto stub = devtime::testing::CollectorStub(address, token);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListJobsResponse response;
  return stub->ListJobs(&context, v1::ListJobsRequest(), &response).error_code();
}

// The pid of the devtime-collector serving `port` (started with --listen 127.0.0.1:PORT).
pid_t CollectorPid(int port) {
  std::string listen = "127.0.0.1:" + std::to_string(port);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("devtime-collector") != std::string::npos &&
        cmdline.find(" " + listen + " ") != std::string::npos) {
      return std::stoi(entry.path().filename().string());
    }
  }
  return -1;
}

// A number from /proc/PID/status ("Threads", "VmRSS" in kB).
long StatusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}
long Threads(pid_t pid) { return StatusField(pid, "Threads"); }

// Transactions in a window: committed (pg_stat_database, which backends report within about
// a second) and write transactions (xids handed out: exact; each reading costs one).
struct Transactions {
  double committed_per_s;
  double writes_per_s;
};
Transactions Observe(const TestDatabase& db, std::chrono::seconds window) {
  auto committed = [&] {
    return std::stoll(
        db.Query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"));
  };
  auto xid = [&] { return std::stoll(db.Query("SELECT txid_current()")); };
  long long c0 = committed(), x0 = xid();
  auto start = Clock::now();
  std::this_thread::sleep_for(window);  // a rate needs a window: this is the measurement
  long long x1 = xid(), c1 = committed();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {static_cast<double>(c1 - c0) / seconds, static_cast<double>(x1 - x0 - 1) / seconds};
}

TEST(Sessions, RunNowAndJobChangesThroughOneCollectorReachAgentsOnAnotherWithinASecond) {
  TestDatabase db;
  CollectorProcess a(db.conninfo()), b(db.conninfo());
  auto admin_a = devtime::testing::CollectorStub(a.address(), a.admin_token());
  auto admin_b = devtime::testing::CollectorStub(b.address(), b.admin_token());
  std::string token_on_b = AddAgent(*admin_b, "agent-on-b", "host-b");
  std::string token_on_a = AddAgent(*admin_b, "agent-on-a", "host-a");
  auto stub_a = RawStub(a.address(), 0);
  auto stub_b = RawStub(b.address(), 1);
  FakeAgent on_b(*stub_b, "agent-on-b", "host-b", token_on_b);
  FakeAgent on_a(*stub_a, "agent-on-a", "host-a", token_on_a);
  ASSERT_TRUE(WaitFor([&] { return db.Count("agents") == 2; })) << b.Log();

  // A job applied through A is pushed to the session on B.
  auto applied = Clock::now();
  Apply(*admin_a, Job("nightly"));
  ASSERT_TRUE(WaitFor([&] { return on_b.Assigned("nightly") && on_a.Assigned("nightly"); },
                      std::chrono::seconds(1)))
      << "job change not pushed within 1 s; collector B's log:\n"
      << b.Log();
  std::cout << "job change through A pushed to the agent on B in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - applied).count()
            << " ms" << std::endl;

  // A run-now for B's host, made through A, reaches the session on B, and only that one.
  std::vector<long long> latencies_ms;
  for (int i = 0; i < 5; ++i) {
    auto asked = Clock::now();
    int64_t id = RunNow(*admin_a, "nightly", "host-b");
    ASSERT_TRUE(WaitFor([&] { return on_b.LastRunNowIs(id); }, std::chrono::seconds(1)))
        << "run-now " << id << " not delivered within 1 s; collector B's log:\n"
        << b.Log();
    latencies_ms.push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>(on_b.run_now().back().at - asked)
            .count());
  }
  EXPECT_TRUE(on_a.run_now().empty()) << "a request for host-b went to host-a";
  std::sort(latencies_ms.begin(), latencies_ms.end());
  std::cout << "run-now through A delivered on B: min " << latencies_ms.front() << " ms, max "
            << latencies_ms.back() << " ms" << std::endl;

  // Requests for any host go to exactly one agent each, whichever collector it is on.
  std::set<int64_t> asked;
  for (int i = 0; i < 10; ++i) asked.insert(RunNow(*admin_b, "nightly", ""));
  auto delivered = [&] {
    std::multiset<int64_t> ids;
    for (auto* agent : {&on_a, &on_b}) {
      for (const auto& r : agent->run_now()) {
        if (asked.count(r.request.request_id())) ids.insert(r.request.request_id());
      }
    }
    return ids;
  };
  ASSERT_TRUE(WaitFor([&] { return delivered().size() >= asked.size(); }, std::chrono::seconds(5)));
  auto ids = delivered();
  EXPECT_EQ(std::set<int64_t>(ids.begin(), ids.end()), asked);
  EXPECT_EQ(ids.size(), asked.size()) << "a request was delivered twice";

  // Both agents show as connected (the heartbeat is batched per collector).
  ASSERT_TRUE(WaitFor([&] {
    grpc::ClientContext context;
    v1::ListAgentsResponse response;
    if (!admin_a->ListAgents(&context, v1::ListAgentsRequest(), &response).ok()) return false;
    int connected = 0;
    for (const auto& agent : response.agents()) connected += agent.connected();
    return connected == 2;
  }));
  // A deleted job is taken away from the agents on both collectors.
  {
    grpc::ClientContext context;
    v1::DeleteJobRequest request;
    request.set_name("nightly");
    v1::DeleteJobResponse response;
    ASSERT_TRUE(admin_b->DeleteJob(&context, request, &response).ok());
  }
  EXPECT_TRUE(WaitFor([&] { return !on_a.Assigned("nightly") && !on_b.Assigned("nightly"); },
                      std::chrono::seconds(1)));
}

TEST(Sessions, IdleSessionsCostNeitherAThreadNorATransactionEach) {
  const int sessions = std::getenv("DEVTIME_TEST_IDLE_SESSIONS")
                           ? std::atoi(std::getenv("DEVTIME_TEST_IDLE_SESSIONS"))
                           : 200;
  TestDatabase db;
  CollectorProcess collector(db.conninfo(), devtime::testing::FreePort());
  // Tokens "tok-I" for agents "idle-I", written as `agents add` would (SHA-256 only).
  db.Query(
      "INSERT INTO agent_tokens (name, host, token_sha256) SELECT 'idle-' || i,"
      " 'idle-' || i || '.test', encode(sha256(convert_to('tok-' || i, 'UTF8')), 'hex')"
      " FROM generate_series(1, " +
      std::to_string(sessions) + ") AS i RETURNING 1");
  pid_t pid = CollectorPid(collector.grpc_port());
  ASSERT_GT(pid, 0);
  auto admin = devtime::testing::CollectorStub(collector.address(), collector.admin_token());
  Apply(*admin, Job("nightly"));  // every session gets it pushed: the sign it has joined
  ASSERT_EQ(ListJobsAs(collector.address(), collector.admin_token()), grpc::StatusCode::OK);

  long threads_idle = Threads(pid), rss_idle_kb = StatusField(pid, "VmRSS");
  Transactions none = Observe(db, std::chrono::seconds(6));

  std::vector<std::unique_ptr<v1::Collector::Stub>> stubs;
  for (int i = 0; i < (sessions + 99) / 100; ++i) stubs.push_back(RawStub(collector.address(), i));
  std::vector<std::unique_ptr<FakeAgent>> agents;
  auto opening = Clock::now();
  for (int i = 1; i <= sessions; ++i) {
    std::string n = std::to_string(i);
    agents.push_back(std::make_unique<FakeAgent>(*stubs[(i - 1) / 100], "idle-" + n,
                                                 "idle-" + n + ".test", "tok-" + n));
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        for (auto& agent : agents) {
          if (agent->done()) return true;  // fails below with its status
          if (!agent->Assigned("nightly")) return false;
        }
        return true;
      },
      std::chrono::seconds(120)));
  for (auto& agent : agents) ASSERT_FALSE(agent->done()) << agent->status().error_message();
  auto opened_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - opening).count();
  long threads_busy = Threads(pid), rss_busy_kb = StatusField(pid, "VmRSS");
  // The joins' own transactions (token, agent record, run-now claim: three each) reach
  // pg_stat_database late: a PostgreSQL 15 backend that flushed its counters less than a
  // second ago holds the next ones for up to PGSTAT_IDLE_INTERVAL (10 s). The idle window
  // starts after them.
  Transactions joining = Observe(db, std::chrono::seconds(11));
  Transactions idle = Observe(db, std::chrono::seconds(6));
  std::cout << sessions << " sessions opened in " << opened_ms << " ms; collector threads "
            << threads_idle << " -> " << threads_busy << ", RSS " << rss_idle_kb / 1024 << " -> "
            << rss_busy_kb / 1024 << " MB; transactions/s committed " << none.committed_per_s
            << " -> " << idle.committed_per_s << " (while joining " << joining.committed_per_s
            << ")"
            << ", writing " << none.writes_per_s << " -> " << idle.writes_per_s << std::endl;

  EXPECT_LT(threads_busy - threads_idle, 16) << "sessions must not cost a thread each";
  // One heartbeat statement per second (--heartbeat-ms 1000) for all of them, plus what
  // autovacuum does for the agents table those updates touch (a transaction now and then);
  // before, each session cost three transactions a second (here: 600/s).
  EXPECT_LE(idle.writes_per_s - none.writes_per_s, 3.0);
  EXPECT_LE(idle.committed_per_s - none.committed_per_s, 6.0);
  EXPECT_EQ(db.Query("SELECT count(*) FROM agents WHERE last_seen > now() - interval '5 s'"),
            std::to_string(sessions));
}

TEST(Sessions, AfterPostgresRestartsTheListenerReconnectsAndMissedRequestsAreDelivered) {
  TestDatabase db;
  CollectorProcess collector(db.conninfo());
  auto admin = devtime::testing::CollectorStub(collector.address(), collector.admin_token());
  std::string token = AddAgent(*admin, "trn-r", "trn-r.test");
  Apply(*admin, Job("nightly"));
  auto stub = RawStub(collector.address(), 0);
  FakeAgent agent(*stub, "trn-r", "trn-r.test", token);
  ASSERT_TRUE(WaitFor([&] { return agent.Assigned("nightly"); }));

  TestDatabase::RestartCluster();  // the LISTEN connection is cut; the stream is not
  // Whether the request's NOTIFY finds the listener back or not (then the re-sync on
  // reconnecting finds it), the agent gets it within the listener's backoff.
  int64_t id = RunNow(*admin, "nightly", "");
  ASSERT_TRUE(WaitFor([&] { return agent.LastRunNowIs(id); }, std::chrono::seconds(35)))
      << collector.Log();
  EXPECT_FALSE(agent.done());
  // And pushes work again: the next request arrives at once.
  int64_t next = RunNow(*admin, "nightly", "");
  EXPECT_TRUE(WaitFor([&] { return agent.LastRunNowIs(next); }, std::chrono::seconds(1)));
}

TEST(Sessions, ReplacedAgentTokenIsRefusedEverywhereWithinTheCacheTtl) {
  TestDatabase db;
  CollectorProcess a(db.conninfo()), b(db.conninfo());
  auto admin_a = devtime::testing::CollectorStub(a.address(), a.admin_token());
  std::string old_token = AddAgent(*admin_a, "trn-a", "trn-a.test");
  ASSERT_EQ(ListJobsAs(b.address(), old_token), grpc::StatusCode::OK);  // now remembered by B
  ASSERT_EQ(ListJobsAs(a.address(), old_token), grpc::StatusCode::OK);

  auto replaced = Clock::now();
  std::string new_token = AddAgent(*admin_a, "trn-a", "trn-a.test");
  // The issuing collector forgets the old token at once; the new one works everywhere at once.
  EXPECT_EQ(ListJobsAs(a.address(), old_token), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListJobsAs(b.address(), new_token), grpc::StatusCode::OK);
  // The other collector refuses it once its memory of it expires: the documented 10 s TTL.
  ASSERT_TRUE(WaitFor(
      [&] { return ListJobsAs(b.address(), old_token) == grpc::StatusCode::UNAUTHENTICATED; },
      std::chrono::seconds(12)));
  auto refused_after =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - replaced).count();
  std::cout << "replaced token refused by the other collector after " << refused_after << " ms"
            << std::endl;
  EXPECT_LE(refused_after, 10'000 + 2'000);
  // A session with the old token is refused too.
  auto stub = RawStub(b.address(), 0);
  FakeAgent session(*stub, "trn-a", "trn-a.test", old_token);
  ASSERT_TRUE(WaitFor([&] { return session.done(); }));
  EXPECT_EQ(session.status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

long long MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Issue 26: a session opened with a token that `agents add` then replaced kept its stream and
// its run-now requests. Now the collector that replaced it closes its own such sessions at
// once, every other one within the token cache's TTL (10 s), and no run-now request asked
// after the replacement reaches them: it waits for the agent's session with the new token.
TEST(Sessions, AReplacedTokensOpenSessionsAreClosedWithinTheTtlAndGetNoRunNow) {
  TestDatabase db;
  CollectorProcess a(db.conninfo()), b(db.conninfo());
  auto admin_a = devtime::testing::CollectorStub(a.address(), a.admin_token());
  std::string old_token = AddAgent(*admin_a, "trn-s", "trn-s.test");
  Apply(*admin_a, Job("nightly"));
  auto stub_a = RawStub(a.address(), 0);
  auto stub_b = RawStub(b.address(), 1);
  FakeAgent on_a(*stub_a, "trn-s", "trn-s.test", old_token);  // on the replacing collector
  FakeAgent on_b(*stub_b, "trn-s", "trn-s.test", old_token);  // on another one
  ASSERT_TRUE(WaitFor([&] { return on_a.Assigned("nightly") && on_b.Assigned("nightly"); }))
      << b.Log();
  // Both serve run-now requests while the token is valid.
  int64_t before = RunNow(*admin_a, "nightly", "trn-s.test");
  ASSERT_TRUE(WaitFor([&] { return on_a.GotRunNow(before) || on_b.GotRunNow(before); }));

  auto replaced = Clock::now();
  std::string new_token = AddAgent(*admin_a, "trn-s", "trn-s.test");
  int64_t after = RunNow(*admin_a, "nightly", "trn-s.test");  // asked after the replacement
  bool closed_on_a = WaitFor([&] { return on_a.done(); }, std::chrono::seconds(12));
  long long closed_on_a_ms = MillisSince(replaced);
  bool closed_on_b = WaitFor([&] { return on_b.done(); }, std::chrono::seconds(12));
  long long closed_on_b_ms = MillisSince(replaced);
  for (auto* old_session : {&on_a, &on_b}) {
    EXPECT_FALSE(old_session->GotRunNow(after))
        << "a run-now asked after the replacement reached a session with the old token";
  }
  ASSERT_TRUE(closed_on_a) << "the session with the replaced token is still open on the "
                              "collector that replaced it; its log:\n"
                           << a.Log();
  ASSERT_TRUE(closed_on_b) << "the session with the replaced token is still open on the other "
                              "collector 12 s after the replacement; its log:\n"
                           << b.Log();
  std::cout << "sessions with the replaced token closed after " << closed_on_a_ms
            << " ms on the replacing collector, " << closed_on_b_ms << " ms on the other"
            << std::endl;
  EXPECT_LE(closed_on_a_ms, 2'000) << "the replacing collector closes its sessions at once";
  EXPECT_LE(closed_on_b_ms, 10'000 + 2'000) << "within the token cache's TTL (+ margin)";
  for (auto* old_session : {&on_a, &on_b}) {
    EXPECT_EQ(old_session->status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_THAT(old_session->status().error_message(), HasSubstr("was replaced"));
  }

  // The agent reconnects with its new token and gets the request that waited for it.
  FakeAgent renewed(*stub_b, "trn-s", "trn-s.test", new_token);
  EXPECT_TRUE(WaitFor([&] { return renewed.GotRunNow(after); })) << b.Log();
  EXPECT_FALSE(renewed.done()) << renewed.status().error_message();
  // And a session with the old token is refused from now on, on both collectors.
  for (auto* stub : {stub_a.get(), stub_b.get()}) {
    FakeAgent refused(*stub, "trn-s", "trn-s.test", old_token);
    ASSERT_TRUE(WaitFor([&] { return refused.done(); }));
    EXPECT_EQ(refused.status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
}

// Issue 26: `devtimectl agents revoke NAME` deletes the token; the agent's open sessions are
// closed (on another collector than the one that revoked it, within the TTL), new ones are
// refused, and revoking an agent that holds no token says so.
TEST(Sessions, AgentsRevokeClosesTheAgentsSessionsAndRefusesNewOnes) {
  TestDatabase db;
  CollectorProcess a(db.conninfo()), b(db.conninfo());
  auto admin_a = devtime::testing::CollectorStub(a.address(), a.admin_token());
  std::string token = AddAgent(*admin_a, "trn-v", "trn-v.test");
  std::string other_token = AddAgent(*admin_a, "trn-w", "trn-w.test");
  Apply(*admin_a, Job("nightly"));
  auto stub_b = RawStub(b.address(), 0);
  FakeAgent revoked(*stub_b, "trn-v", "trn-v.test", token);
  FakeAgent other(*stub_b, "trn-w", "trn-w.test", other_token);
  ASSERT_TRUE(WaitFor([&] { return revoked.Assigned("nightly") && other.Assigned("nightly"); }))
      << b.Log();

  const std::vector<std::string> admin{"--token-file", a.admin_token_file()};
  auto started = Clock::now();
  auto revoke = devtime::testing::Ctl(a, {"agents", "revoke", "trn-v"}, admin);
  ASSERT_EQ(revoke.exit_code, 0) << revoke.err;
  EXPECT_THAT(revoke.out, HasSubstr("revoked the token of agent trn-v"));
  EXPECT_EQ(db.Query("SELECT count(*) FROM agent_tokens WHERE name = 'trn-v'"), "0");
  ASSERT_TRUE(WaitFor([&] { return revoked.done(); }, std::chrono::seconds(12))) << b.Log();
  long long closed_ms = MillisSince(started);
  std::cout << "session of the revoked agent closed on the other collector after " << closed_ms
            << " ms" << std::endl;
  EXPECT_LE(closed_ms, 10'000 + 2'000);
  EXPECT_EQ(revoked.status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(revoked.status().error_message(), HasSubstr("trn-v' was revoked"));
  EXPECT_FALSE(other.done()) << "another agent's session was closed: "
                             << other.status().error_message();

  // A new session with the revoked token is refused, on either collector, at once.
  for (const auto& address : {a.address(), b.address()}) {
    auto stub = RawStub(address, 1);
    FakeAgent refused(*stub, "trn-v", "trn-v.test", token);
    ASSERT_TRUE(WaitFor([&] { return refused.done(); }, std::chrono::seconds(5)));
    EXPECT_EQ(refused.status().error_code(), grpc::StatusCode::UNAUTHENTICATED) << address;
  }
  EXPECT_EQ(ListJobsAs(b.address(), token), grpc::StatusCode::UNAUTHENTICATED);

  // Nothing to revoke: an unknown agent, or one revoked already. Only the admin may revoke.
  for (const std::string name : {"no-such-agent", "trn-v"}) {
    auto unknown = devtime::testing::Ctl(a, {"agents", "revoke", name}, admin);
    EXPECT_EQ(unknown.exit_code, wire::kExitNotFound) << unknown.err;
    EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND"));
    EXPECT_THAT(unknown.err, HasSubstr("agent '" + name + "' holds no token"));
  }
  std::string agent_token_file = devtime::testing::MakeTempDir("revoke") + "/agent.token";
  std::ofstream(agent_token_file) << other_token << "\n";
  auto forbidden =
      devtime::testing::Ctl(a, {"agents", "revoke", "trn-w"}, {"--token-file", agent_token_file});
  EXPECT_EQ(forbidden.exit_code, wire::kExitPermission) << forbidden.err;
  EXPECT_FALSE(other.done());
}

}  // namespace
}  // namespace devtime
