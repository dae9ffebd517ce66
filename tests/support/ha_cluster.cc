#include "tests/support/ha_cluster.h"

#include <filesystem>
#include <stdexcept>
#include <vector>

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
  auto port = RunCommand({"cat", dir_ + "/node" + std::to_string(node) + ".port"}).out;
  return "host=127.0.0.1 port=" + Trimmed(port) + " user=devtime dbname=devtime";
}

int HaCluster::Primary() const { return NodeNumber(Script("primary")); }

void HaCluster::Kill(int node) { Script("kill", std::to_string(node)); }

int HaCluster::WaitForPromotion(int old_primary, std::chrono::seconds limit) const {
  auto done = RunCommand(
      {kScript, "wait-primary", dir_, std::to_string(old_primary), std::to_string(limit.count())},
      limit + std::chrono::seconds(10));
  return done.exit_code == 0 ? NodeNumber(done.out) : 0;
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
