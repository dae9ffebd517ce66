#include "tests/support/test_database.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>

#include "pqxx/pqxx"

namespace devtime::testing {
namespace {

std::string ClusterConninfo() {
  const char* conninfo = std::getenv("DEVTIME_TEST_DATABASE");
  if (conninfo == nullptr || *conninfo == '\0') {
    std::cerr << "integration tests need a PostgreSQL cluster: run deploy/test.sh, or set "
                 "DEVTIME_TEST_DATABASE (and DEVTIME_TEST_PG_DIR) yourself\n";
    std::abort();
  }
  return conninfo;
}

// The connection string with dbname replaced.
std::string WithDatabase(const std::string& conninfo, const std::string& name) {
  std::string out;
  std::size_t start = 0;
  while (start < conninfo.size()) {
    std::size_t end = conninfo.find(' ', start);
    if (end == std::string::npos) end = conninfo.size();
    std::string part = conninfo.substr(start, end - start);
    if (!part.empty() && part.rfind("dbname=", 0) != 0) out += part + " ";
    start = end + 1;
  }
  return out + "dbname=" + name;
}

void PgCtl(const std::string& verb) {
  const char* dir = std::getenv("DEVTIME_TEST_PG_DIR");
  if (dir == nullptr) {
    std::cerr << "DEVTIME_TEST_PG_DIR is not set: deploy/test.sh sets it\n";
    std::abort();
  }
  std::string command =
      std::string(DEVTIME_SOURCE_DIR) + "/deploy/pg.sh " + verb + " '" + dir + "'";
  if (std::system(command.c_str()) != 0) {
    std::cerr << "failed: " << command << "\n";
    std::abort();
  }
}

}  // namespace

TestDatabase::TestDatabase() {
  static std::atomic<int> counter{0};
  name_ = "devtime_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  std::string cluster = ClusterConninfo();
  pqxx::connection admin{WithDatabase(cluster, "postgres")};
  pqxx::nontransaction tx{admin};
  tx.exec("DROP DATABASE IF EXISTS " + name_);
  tx.exec("CREATE DATABASE " + name_);
  conninfo_ = WithDatabase(cluster, name_);
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection admin{WithDatabase(ClusterConninfo(), "postgres")};
    pqxx::nontransaction tx{admin};
    tx.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception& e) {
    std::cerr << "could not drop test database " << name_ << ": " << e.what() << "\n";
  }
}

std::string TestDatabase::Query(const std::string& sql) const {
  pqxx::connection c{conninfo_};
  pqxx::nontransaction tx{c};
  auto rows = tx.exec(sql);
  if (rows.empty() || rows[0][0].is_null()) return "";
  return rows[0][0].as<std::string>();
}

long long TestDatabase::Count(const std::string& table) const {
  return std::stoll(Query("SELECT count(*) FROM " + table));
}

void TestDatabase::RestartCluster() { PgCtl("restart"); }
void TestDatabase::StopCluster() { PgCtl("stop"); }
void TestDatabase::StartCluster() { PgCtl("start"); }

std::string BinaryPath(const std::string& name) {
  return std::string(DEVTIME_BINARY_DIR) + "/bin/" + name;
}

}  // namespace devtime::testing
