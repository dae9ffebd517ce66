#include "services/ctl/job_commands.h"

#include <memory>

#include "proto/wire/names.h"
#include "proto/wire/time.h"
#include "services/ctl/jobs_file.h"
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

using Align = TextTable::Align;

std::string Schedule(const v1::JobSpec& job) {
  std::string text = job.schedule().cron() + " " + job.schedule().time_zone();
  if (job.schedule().jitter_seconds()) {
    text += " +" + std::to_string(job.schedule().jitter_seconds()) + "s jitter";
  }
  return text;
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text.empty() ? "-" : text;
}

void PrintSlots(const Session& session,
                const google::protobuf::RepeatedPtrField<v1::JobSlot>& slots) {
  TextTable table({"slot (UTC)", "host", "outcome", "run id", "reason"});
  for (const auto& slot : slots) {
    table.AddRow({wire::FormatTime(slot.slot_time()) + (slot.run_now() ? " (run-now)" : ""),
                  slot.host().empty() ? "-" : slot.host(), wire::SlotOutcomeName(slot.outcome()),
                  slot.run_id().empty() ? "-" : slot.run_id(), slot.reason().substr(0, 100)});
  }
  session.out << (table.empty() ? "no slots yet\n" : table.Render());
}

// A request naming a job or an agent and a host (run-now, agents add).
template <typename Request>
Request NameAndHost(const std::string& name, const std::string& host) {
  Request request;
  request.set_name(name);
  request.set_host(host);
  return request;
}

void PrintJobs(const Session& session, const v1::ListJobsResponse& response) {
  TextTable table(
      {"job", "model / workload", "schedule", "next slot (UTC)", "last outcome", "agents"});
  for (const auto& job : response.jobs()) {
    table.AddRow(
        {job.spec().name(), job.spec().model() + " / " + job.spec().workload(),
         Schedule(job.spec()), job.has_next_slot() ? wire::FormatTime(job.next_slot()) : "-",
         job.has_last_slot() ? wire::SlotOutcomeName(job.last_slot().outcome()) : "never ran",
         Join(job.matching_agents())});
  }
  session.out << (table.empty() ? "no jobs: devtimectl jobs apply -f jobs.yaml\n" : table.Render());
}

void PrintJob(const Session& session, const v1::JobInfo& info) {
  const auto& job = info.spec();
  session.out << "job       " << job.name() << "\n"
              << "runs      " << job.model() << " / " << job.workload() << "\n"
              << "command   " << job.command() << "\n"
              << "schedule  " << Schedule(job) << "\n"
              << "next slot " << (info.has_next_slot() ? wire::FormatTime(info.next_slot()) : "-")
              << "\n"
              << "timeout   " << job.timeout_seconds() << " s, " << job.capture_steps()
              << " capture steps, " << job.retries() << " retries\n"
              << "agents    " << Join(info.matching_agents()) << "\n";
  for (const auto& pending : info.pending_run_now()) {
    session.out << "run-now   request " << pending.request_id() << " waiting since "
                << wire::FormatTime(pending.requested_at())
                << (pending.host().empty() ? "" : " for host " + pending.host()) << ", expires "
                << wire::FormatTime(pending.expires_at()) << "\n";
  }
  session.out << "\n";
}

void PrintAgents(const Session& session, const v1::ListAgentsResponse& response) {
  TextTable table({"agent", "host", "instance", "labels", "connected", "last seen (UTC)"});
  for (const auto& agent : response.agents()) {
    std::string labels;
    for (const auto& [k, v] : agent.identity().labels())
      labels += (labels.empty() ? "" : ",") + k + "=" + v;
    table.AddRow({agent.identity().name(), agent.identity().host(),
                  agent.identity().instance_type().empty() ? "-" : agent.identity().instance_type(),
                  labels.empty() ? "-" : labels, agent.connected() ? "yes" : "no",
                  wire::FormatTime(agent.last_seen())});
  }
  session.out << (table.empty() ? "no agents have connected yet\n" : table.Render());
}

}  // namespace

int JobsApply(const Session& session, const std::string& file) {
  auto jobs = ReadJobsFile(file);
  if (!jobs.ok()) {
    session.err << "devtimectl: " << jobs.status().message() << "\n";
    return 2;
  }
  v1::ApplyJobsRequest request;
  for (auto& job : *jobs) *request.add_jobs() = std::move(job);
  v1::ApplyJobsResponse response;
  if (auto failed = Call(session, &Stub::ApplyJobs, request, &response)) return *failed;
  for (const auto& name : response.created()) session.out << "created   " << name << "\n";
  for (const auto& name : response.updated()) session.out << "updated   " << name << "\n";
  for (const auto& name : response.unchanged()) session.out << "unchanged " << name << "\n";
  return 0;
}

int JobsList(const Session& session, Format format) {
  return CallAllAndPrint(
      session, &Stub::ListJobs, {}, 0, &v1::ListJobsResponse::mutable_jobs, format,
      [&](const v1::ListJobsResponse& response) { PrintJobs(session, response); });
}

int JobsShow(const Session& session, const std::string& name, Format format) {
  v1::GetJobRequest request;
  request.set_name(name);
  return CallAndPrint(session, &Stub::GetJob, request, format, [&](const v1::JobInfo& info) {
    PrintJob(session, info);
    return JobsHistory(session, name, 10, Format::kTable);
  });
}

int JobsDelete(const Session& session, const std::string& name) {
  v1::DeleteJobRequest request;
  request.set_name(name);
  v1::DeleteJobResponse response;
  if (auto failed = Call(session, &Stub::DeleteJob, request, &response)) return *failed;
  session.out << "deleted " << name << " (its history is kept)\n";
  return 0;
}

int JobsRunNow(const Session& session, const std::string& name, const std::string& host) {
  const auto request = NameAndHost<v1::RunJobNowRequest>(name, host);
  v1::RunJobNowResponse response;
  if (auto failed = Call(session, &Stub::RunJobNow, request, &response)) return *failed;
  session.out << "requested run of " << name << (host.empty() ? "" : " on " + host) << " (request "
              << response.request_id() << "), for " << Join(response.matching_agents()) << "; ";
  if (response.connected_agents() == 0) {
    session.out << "none of them is connected now: it runs when one connects, or expires at "
                << wire::FormatTime(response.expires_at()) << ". ";
  }
  session.out << "Follow it with: devtimectl jobs history " << name << "\n";
  return 0;
}

int JobsHistory(const Session& session, const std::string& name, unsigned limit, Format format) {
  v1::JobHistoryRequest request;
  request.set_name(name);
  return CallAllAndPrint(
      session, &Stub::JobHistory, request, limit, &v1::JobHistoryResponse::mutable_slots, format,
      [&](const v1::JobHistoryResponse& response) { PrintSlots(session, response.slots()); });
}

int AgentsList(const Session& session, Format format) {
  return CallAndPrint(
      session, &Stub::ListAgents, {}, format,
      [&](const v1::ListAgentsResponse& response) { PrintAgents(session, response); });
}

int AgentsAdd(const Session& session, const std::string& name, const std::string& host) {
  const auto request = NameAndHost<v1::AddAgentRequest>(name, host);
  v1::AddAgentResponse response;
  if (auto failed = Call(session, &Stub::AddAgent, request, &response)) return *failed;
  // The token alone on stdout, so `devtimectl agents add a --host h > a.token` stores it.
  session.out << response.token() << "\n";
  session.err << "agent " << name << " may now write runs for host " << host
              << "; put the token in its token_file (shown once)\n";
  return 0;
}

int AgentsRevoke(const Session& session, const std::string& name) {
  v1::RevokeAgentRequest request;
  request.set_name(name);
  v1::RevokeAgentResponse response;
  if (auto failed = Call(session, &Stub::RevokeAgent, request, &response)) return *failed;
  session.out << "revoked the token of agent " << name
              << ": its calls are refused and its open sessions closed on every collector within "
                 "their token cache TTL (--token-cache-ttl-ms, 10 s by default); agents add "
                 "issues a new one\n";
  return 0;
}

void AddJobCommands(CLI::App& app, CommandContext& context) {
  auto* jobs = app.add_subcommand("jobs", "scheduled profiling jobs");
  jobs->require_subcommand(1);
  struct Options {
    std::string file, name, host;
    Format format = Format::kTable;
    unsigned history_limit = 50;
  };
  auto o = std::make_shared<Options>();
  auto* apply = jobs->add_subcommand(
      "apply", "create or update the jobs in a YAML file (see deploy/jobs.example.yaml)");
  apply->add_option("-f,--file", o->file, "jobs file")->required();
  OnParsed(apply, context, [o](const Session& s) { return JobsApply(s, o->file); });
  auto* list = jobs->add_subcommand("list", "jobs with their next slot and last outcome");
  AddFormatOption(list, &o->format);
  OnParsed(list, context, [o](const Session& s) { return JobsList(s, o->format); });
  auto* show = jobs->add_subcommand("show", "one job and its recent slots");
  show->add_option("NAME", o->name, "job name")->required();
  AddFormatOption(show, &o->format);
  OnParsed(show, context, [o](const Session& s) { return JobsShow(s, o->name, o->format); });
  auto* remove = jobs->add_subcommand("delete", "delete a job (its history is kept)");
  remove->add_option("NAME", o->name, "job name")->required();
  OnParsed(remove, context, [o](const Session& s) { return JobsDelete(s, o->name); });
  auto* run_now = jobs->add_subcommand("run-now", "run a job now on a matching agent");
  run_now->add_option("NAME", o->name, "job name")->required();
  run_now->add_option("--host", o->host, "only on this host");
  OnParsed(run_now, context, [o](const Session& s) { return JobsRunNow(s, o->name, o->host); });
  auto* history = jobs->add_subcommand(
      "history", "each slot of a job: ran, succeeded, failed (why) or missed (why)");
  history->add_option("NAME", o->name, "job name")->required();
  history->add_option("--limit", o->history_limit, "at most this many slots")
      ->capture_default_str();
  AddFormatOption(history, &o->format);
  OnParsed(history, context,
           [o](const Session& s) { return JobsHistory(s, o->name, o->history_limit, o->format); });
}

void AddAgentCommands(CLI::App& app, CommandContext& context) {
  auto* agents = app.add_subcommand("agents", "the agents that run jobs");
  agents->require_subcommand(1);
  struct Options {
    Format format = Format::kTable;
    std::string name, host;
  };
  auto o = std::make_shared<Options>();
  auto* list = agents->add_subcommand("list", "agents, their labels and when last seen");
  AddFormatOption(list, &o->format);
  OnParsed(list, context, [o](const Session& s) { return AgentsList(s, o->format); });
  auto* add = agents->add_subcommand(
      "add", "issue (or replace) an agent's token; prints it once (admin token needed)");
  add->add_option("NAME", o->name, "the agent's name (agent.yaml: name)")->required();
  add->add_option("--host", o->host, "the only host it may write runs for")->required();
  OnParsed(add, context, [o](const Session& s) { return AgentsAdd(s, o->name, o->host); });
  auto* revoke = agents->add_subcommand(
      "revoke",
      "delete an agent's token: its calls are refused and its open sessions closed on every "
      "collector within the token cache TTL (10 s by default); admin token needed");
  revoke->add_option("NAME", o->name, "the agent's name")->required();
  OnParsed(revoke, context, [o](const Session& s) { return AgentsRevoke(s, o->name); });
}

}  // namespace devtime::ctl
