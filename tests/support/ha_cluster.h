// A replicated PostgreSQL for failover tests: deploy/ha/pgaf.sh's pg_auto_failover monitor
// and three nodes (a primary, two synchronous standbys) on loopback ports, in a folder of
// the test's own. Starting needs Debian's postgresql-15-auto-failover (deploy/install-deps.sh);
// without it the constructor throws with the script's message saying so, so the test fails.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace devtime::testing {

// One line of the monitor's event log (pgautofailover.event): a node's health or state
// changing, with the monitor's clock (the same machine's: comparable with system_clock).
struct ClusterEvent {
  std::chrono::system_clock::time_point at;
  std::string node;      // "node1".."node3"
  std::string reported;  // the node's reported state then, e.g. "stop_replication"
  std::string goal;      // the state the monitor assigned it, e.g. "wait_primary"
  std::string description;
};

class HaCluster {
 public:
  explicit HaCluster(std::string dir);  // creates and starts it; throws std::runtime_error
  ~HaCluster();                         // stops it and deletes its data
  HaCluster(const HaCluster&) = delete;
  HaCluster& operator=(const HaCluster&) = delete;

  // "host=127.0.0.1,127.0.0.1,127.0.0.1 port=p1,p2,p3 ... target_session_attrs=read-write"
  const std::string& conninfo() const { return conninfo_; }
  // One node's own conninfo (whatever its role), e.g. a standby for --read-database.
  std::string NodeConninfo(int node) const;
  // The monitor's own conninfo (its pg_auto_failover database).
  std::string MonitorConninfo() const;
  // The primary's node number (1..3), as the monitor sees it (a node reporting and assigned
  // primary, wait_primary or single); 0 when there is none or the monitor is unreachable.
  int Primary() const;
  // kill -9 of node `node`'s pg_autoctl and PostgreSQL: a machine that died.
  void Kill(int node);
  // The monitor's events logged at or after `since`, oldest first: a failover's timeline.
  std::vector<ClusterEvent> Events(std::chrono::system_clock::time_point since) const;
  // pg_autoctl show state (for failure messages).
  std::string State() const;
  // The last lines of every service's log (for failure messages).
  std::string Logs() const;

 private:
  std::string Script(const std::string& verb, const std::string& extra = "") const;
  std::string dir_;
  std::string conninfo_;
};

}  // namespace devtime::testing
