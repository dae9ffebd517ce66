#include "services/ctl/job_commands.h"

#include "proto/wire/channel.h"
#include "proto/wire/json.h"
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
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.ApplyJobs(context.get(), request, &response); !status.ok()) {
    return ReportError(session, status);
  }
  for (const auto& name : response.created()) session.out << "created   " << name << "\n";
  for (const auto& name : response.updated()) session.out << "updated   " << name << "\n";
  for (const auto& name : response.unchanged()) session.out << "unchanged " << name << "\n";
  return 0;
}

int JobsList(const Session& session, Format format) {
  v1::ListJobsResponse response;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.ListJobs(context.get(), {}, &response); !status.ok()) {
    return ReportError(session, status);
  }
  if (format == Format::kJson) {
    session.out << wire::ToJson(response) << "\n";
    return 0;
  }
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
  return 0;
}

int JobsShow(const Session& session, const std::string& name, Format format) {
  v1::GetJobRequest request;
  request.set_name(name);
  v1::JobInfo info;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.GetJob(context.get(), request, &info); !status.ok()) {
    return ReportError(session, status);
  }
  if (format == Format::kJson) {
    session.out << wire::ToJson(info) << "\n";
    return 0;
  }
  const auto& job = info.spec();
  session.out << "job       " << job.name() << "\n"
              << "runs      " << job.model() << " / " << job.workload() << "\n"
              << "command   " << job.command() << "\n"
              << "schedule  " << Schedule(job) << "\n"
              << "next slot " << (info.has_next_slot() ? wire::FormatTime(info.next_slot()) : "-")
              << "\n"
              << "timeout   " << job.timeout_seconds() << " s, " << job.capture_steps()
              << " capture steps, " << job.retries() << " retries\n"
              << "agents    " << Join(info.matching_agents()) << "\n\n";
  return JobsHistory(session, name, 10, Format::kTable);
}

int JobsDelete(const Session& session, const std::string& name) {
  v1::DeleteJobRequest request;
  request.set_name(name);
  v1::DeleteJobResponse response;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.DeleteJob(context.get(), request, &response); !status.ok()) {
    return ReportError(session, status);
  }
  session.out << "deleted " << name << " (its history is kept)\n";
  return 0;
}

int JobsRunNow(const Session& session, const std::string& name, const std::string& host) {
  v1::RunJobNowRequest request;
  request.set_name(name);
  request.set_host(host);
  v1::RunJobNowResponse response;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.RunJobNow(context.get(), request, &response); !status.ok()) {
    return ReportError(session, status);
  }
  session.out << "requested run of " << name << (host.empty() ? "" : " on " + host) << " (request "
              << response.request_id() << "); follow it with: devtimectl jobs history " << name
              << "\n";
  return 0;
}

int JobsHistory(const Session& session, const std::string& name, unsigned limit, Format format) {
  v1::JobHistoryRequest request;
  request.set_name(name);
  request.set_limit(limit);
  v1::JobHistoryResponse response;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.JobHistory(context.get(), request, &response); !status.ok()) {
    return ReportError(session, status);
  }
  if (format == Format::kJson) {
    session.out << wire::ToJson(response) << "\n";
    return 0;
  }
  PrintSlots(session, response.slots());
  return 0;
}

int AgentsList(const Session& session, Format format) {
  v1::ListAgentsResponse response;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.ListAgents(context.get(), {}, &response); !status.ok()) {
    return ReportError(session, status);
  }
  if (format == Format::kJson) {
    session.out << wire::ToJson(response) << "\n";
    return 0;
  }
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
  return 0;
}

int AgentsAdd(const Session& session, const std::string& name, const std::string& host) {
  v1::AddAgentRequest request;
  request.set_name(name);
  request.set_host(host);
  v1::AddAgentResponse response;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.AddAgent(context.get(), request, &response); !status.ok()) {
    return ReportError(session, status);
  }
  // The token alone on stdout, so `devtimectl agents add a --host h > a.token` stores it.
  session.out << response.token() << "\n";
  session.err << "agent " << name << " may now write runs for host " << host
              << "; put the token in its token_file (shown once)\n";
  return 0;
}

}  // namespace devtime::ctl
