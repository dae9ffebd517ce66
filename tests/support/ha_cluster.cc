#include "tests/support/ha_cluster.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "pqxx/pqxx"
#include "tests/support/process.h"

namespace devtime::testing {
namespace {

const std::string kScript = std::string(DEVTIME_SOURCE_DIR) + "/deploy/ha/pgaf.sh";

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

int NodeNumber(const std::string& text) {
  try {
    return std::stoi(Trimmed(text));
  } catch (const std::exception&) {
    return 0;
  }
}

// The port pgaf.sh chose for `name` (monitor, node1..node3), kept in DIR/NAME.port.
std::string PortOf(const std::string& dir, const std::string& name) {
  std::ifstream in(dir + "/" + name + ".port");
  std::string port;
  in >> port;
  return port;
}

}  // namespace

HaCluster::HaCluster(std::string dir) : dir_(std::move(dir)) {
  // As root the cluster runs as the postgres user, which must reach the folder: mkdtemp's
  // folders are the creator's only.
  std::filesystem::path parent = std::filesystem::path(dir_).parent_path();
  std::filesystem::permissions(
      parent, std::filesystem::perms::group_exec | std::filesystem::perms::others_exec,
      std::filesystem::perm_options::add);
  auto started = RunCommand({kScript, "start", dir_}, std::chrono::seconds(120));
  if (started.exit_code != 0) {
    std::string logs = Logs();
    RunCommand({kScript, "destroy", dir_}, std::chrono::seconds(60));
    throw std::runtime_error("deploy/ha/pgaf.sh start " + dir_ + " failed (exit " +
                             std::to_string(started.exit_code) + "): " + started.err + "\n" + logs);
  }
  conninfo_ = Trimmed(RunCommand({kScript, "conninfo", dir_}).out);
}

HaCluster::~HaCluster() { RunCommand({kScript, "destroy", dir_}, std::chrono::seconds(90)); }

std::string HaCluster::Script(const std::string& verb, const std::string& extra) const {
  std::vector<std::string> argv{kScript, verb, dir_};
  if (!extra.empty()) argv.push_back(extra);
  return RunCommand(argv, std::chrono::seconds(30)).out;
}

std::string HaCluster::NodeConninfo(int node) const {
  return "host=127.0.0.1 port=" + PortOf(dir_, "node" + std::to_string(node)) +
         " user=devtime dbname=devtime";
}

std::string HaCluster::MonitorConninfo() const {
  return "host=127.0.0.1 port=" + PortOf(dir_, "monitor") +
         " user=autoctl_node dbname=pg_auto_failover connect_timeout=5";
}

// Asked of the monitor directly rather than through `pgaf.sh primary` (bash, runuser and
// psql per question): polled every 100 ms during a failover: on a loaded 2-core machine the
// script's forks would delay both the answer and the cluster it watches.
int HaCluster::Primary() const {
  try {
    pqxx::connection monitor{MonitorConninfo()};
    pqxx::nontransaction tx{monitor};
    auto rows = tx.exec(
        "SELECT nodename FROM pgautofailover.node"
        " WHERE reportedstate IN ('primary', 'wait_primary', 'single')"
        " AND goalstate IN ('primary', 'wait_primary', 'single') ORDER BY nodeid LIMIT 1");
    return rows.empty() ? 0 : NodeNumber(rows[0][0].as<std::string>().substr(4));
  } catch (const std::exception&) {
    return 0;
  }
}

void HaCluster::Kill(int node) { Script("kill", std::to_string(node)); }

std::vector<ClusterEvent> HaCluster::Events(std::chrono::system_clock::time_point since) const {
  pqxx::connection monitor{MonitorConninfo()};
  pqxx::nontransaction tx{monitor};
  const double since_epoch = std::chrono::duration<double>(since.time_since_epoch()).count();
  std::vector<ClusterEvent> events;
  for (const auto& row :
       tx.exec_params("SELECT extract(epoch FROM eventtime)::float8, nodename, reportedstate::text,"
                      " goalstate::text, description FROM pgautofailover.event"
                      " WHERE eventtime >= to_timestamp($1) ORDER BY eventid",
                      since_epoch)) {
    auto at = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::duration<double>(row[0].as<double>())));
    events.push_back({at, row[1].as<std::string>(), row[2].as<std::string>(),
                      row[3].as<std::string>(), row[4].as<std::string>()});
  }
  return events;
}

std::string HaCluster::State() const { return Script("state"); }

std::string HaCluster::Logs() const {
  std::string out;
  for (const char* name : {"monitor", "node1", "node2", "node3"}) {
    out += std::string("--- ") + name + ".log (last lines)\n" +
           RunCommand({"tail", "-n", "15", dir_ + "/" + name + ".log"}).out;
  }
  return out;
}

}  // namespace devtime::testing
