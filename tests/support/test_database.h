// A fresh PostgreSQL database per test binary, on the cluster deploy/test.sh starts.
//
// DEVTIME_TEST_DATABASE names that cluster (libpq connection string); without it the
// integration tests fail with a message saying how to run them. DEVTIME_TEST_PG_DIR is the
// cluster's folder for deploy/pg.sh (tests restart PostgreSQL through it).
#pragma once

#include <string>

namespace devtime::testing {

class TestDatabase {
 public:
  TestDatabase();   // creates devtime_test_<pid>_<n>; aborts the test binary if impossible
  ~TestDatabase();  // drops it
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& conninfo() const { return conninfo_; }
  // Runs one SQL statement and returns the first column of the first row as text.
  std::string Query(const std::string& sql) const;
  long long Count(const std::string& table) const;

  // Restarts the whole PostgreSQL cluster (fast shutdown, then start on the same port).
  static void RestartCluster();
  static void StopCluster();
  static void StartCluster();

 private:
  std::string name_;
  std::string conninfo_;
};

// Path of a built executable ("devtime-collector" -> <build>/bin/devtime-collector).
std::string BinaryPath(const std::string& name);

}  // namespace devtime::testing
