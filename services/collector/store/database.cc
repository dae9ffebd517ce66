#include "services/collector/store/database.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <deque>
#include <regex>
#include <thread>

#include "services/collector/store/migrations.h"

namespace devtime::store {

bool IsConnectionLoss(const pqxx::sql_error& error, const pqxx::connection_base& connection) {
  const std::string state = error.sqlstate();
  return state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0 || state == "25006" ||
         !connection.is_open();
}

bool NamesSeveralHosts(const std::string& conninfo) {
  if (conninfo.rfind("postgres", 0) == 0) return false;  // a URI
  static const std::regex several(R"re((^|\s)(host|hostaddr)\s*=\s*'?[^\s',]*,)re");
  return std::regex_search(conninfo, several);
}

std::string PrimaryConninfo(const std::string& conninfo, int connect_timeout_seconds) {
  if (conninfo.rfind("postgres", 0) == 0) return conninfo;
  std::string out = conninfo;
  if (NamesSeveralHosts(out) && out.find("target_session_attrs") == std::string::npos) {
    out += " target_session_attrs=read-write";
  }
  if (connect_timeout_seconds > 0 && out.find("connect_timeout") == std::string::npos) {
    out += " connect_timeout=" + std::to_string(connect_timeout_seconds);
  }
  return out;
}

// ---- binary arrays ----------------------------------------------------------------------------

namespace {

// Element type oids (pg_type.h); array_recv refuses an array of another element type.
constexpr std::uint32_t kInt4Oid = 23, kInt8Oid = 20, kFloat8Oid = 701, kTextOid = 25;

// One append of the value's bytes, most significant first (the compiler makes it a byte
// swap); byte by byte, it was the larger part of encoding a run's arrays (perf).
template <typename Unsigned>
void AppendBigEndian(std::string& out, Unsigned value) {
  char bytes[sizeof(Unsigned)];
  for (std::size_t i = 0; i < sizeof(Unsigned); ++i) {
    bytes[i] = static_cast<char>((value >> (8 * (sizeof(Unsigned) - 1 - i))) & 0xff);
  }
  out.append(bytes, sizeof bytes);
}

// array_send's layout for one dimension: ndim, has-nulls flag, element type, then (length,
// lower bound 1) and each element as its byte length (-1: NULL) and its binary value.
template <typename Values, typename Element>
pqxx::binarystring EncodeArray(const Values& values, std::uint32_t element_oid, bool nulls,
                               Element&& append_element) {
  std::string out;
  out.reserve(20 + values.size() * 12);
  AppendBigEndian<std::uint32_t>(out, values.empty() ? 0 : 1);
  AppendBigEndian<std::uint32_t>(out, nulls ? 1 : 0);
  AppendBigEndian(out, element_oid);
  if (!values.empty()) {
    AppendBigEndian(out, static_cast<std::uint32_t>(values.size()));
    AppendBigEndian<std::uint32_t>(out, 1);
  }
  for (const auto& value : values) append_element(out, value);
  return pqxx::binarystring(out);
}

// One fixed-width element: its byte length, then its bits.
template <typename Unsigned>
void AppendElement(std::string& out, Unsigned bits) {
  AppendBigEndian<std::uint32_t>(out, sizeof bits);
  AppendBigEndian(out, bits);
}

void AppendFloat8(std::string& out, double value) {
  AppendElement(out, std::bit_cast<std::uint64_t>(value));
}

}  // namespace

pqxx::binarystring BinaryInt4Array(const std::vector<std::int32_t>& values) {
  return EncodeArray(values, kInt4Oid, false, [](std::string& out, std::int32_t v) {
    AppendElement(out, static_cast<std::uint32_t>(v));
  });
}

pqxx::binarystring BinaryInt8Array(const std::vector<std::int64_t>& values) {
  return EncodeArray(values, kInt8Oid, false, [](std::string& out, std::int64_t v) {
    AppendElement(out, static_cast<std::uint64_t>(v));
  });
}

pqxx::binarystring BinaryFloat8Array(const std::vector<double>& values) {
  return EncodeArray(values, kFloat8Oid, false, AppendFloat8);
}

pqxx::binarystring BinaryFloat8Array(const std::vector<std::optional<double>>& values) {
  return EncodeArray(values, kFloat8Oid, true,
                     [](std::string& out, const std::optional<double>& v) {
                       if (v) {
                         AppendFloat8(out, *v);
                       } else {
                         AppendBigEndian(out, static_cast<std::uint32_t>(-1));
                       }
                     });
}

pqxx::binarystring BinaryTextArray(const std::vector<std::string>& values) {
  return EncodeArray(values, kTextOid, false, [](std::string& out, const std::string& v) {
    AppendBigEndian(out, static_cast<std::uint32_t>(v.size()));
    out += v;
  });
}

// ---- the connection pool -------------------------------------------------------------------

// At most `max` connections, opened lazily, handed out first come, first served: a caller
// that finds every connection in use queues for a ticket, and Release hands the freed slot
// (with its connection) to the oldest ticket. A plain condition variable wakes waiters in no
// particular order, so under load (200 uploads for a dozen connections) some waited many
// times the average while others barged ahead. A connection that failed is dropped, and so
// are the idle ones (after a database restart they are all dead).
class Database::Pool {
 public:
  Pool(std::string conninfo, std::size_t max) : conninfo_(std::move(conninfo)), max_(max) {}

  std::unique_ptr<pqxx::connection> Take() {
    std::unique_ptr<pqxx::connection> connection;
    {
      std::unique_lock lock(mu_);
      if (queue_.empty() && in_use_ < max_) {
        ++in_use_;
        connection = PopIdle();
      } else {
        Ticket ticket;
        queue_.push_back(&ticket);
        ticket.granted.wait(lock, [&] { return ticket.served; });
        connection = std::move(ticket.connection);  // the slot is ours; the connection may be null
      }
    }
    if (connection) return connection;
    try {
      return std::make_unique<pqxx::connection>(conninfo_);
    } catch (...) {
      Release(nullptr);
      throw;
    }
  }

  // Returns a healthy connection to the pool (or, with nullptr, frees a failed one's slot).
  // With callers queued, the slot goes to the oldest of them.
  void Release(std::unique_ptr<pqxx::connection> connection) {
    std::lock_guard lock(mu_);
    if (!connection) idle_.clear();
    if (queue_.empty()) {
      --in_use_;
      if (connection) idle_.push_back(std::move(connection));
      return;
    }
    Ticket* next = queue_.front();
    queue_.pop_front();
    next->connection = connection ? std::move(connection) : PopIdle();
    next->served = true;
    next->granted.notify_one();
  }

 private:
  // A caller waiting for a slot; it lives on that caller's stack until served.
  struct Ticket {
    std::condition_variable granted;
    bool served = false;                           // guarded by mu_
    std::unique_ptr<pqxx::connection> connection;  // guarded by mu_; null: open a new one
  };

  std::unique_ptr<pqxx::connection> PopIdle() {
    if (idle_.empty()) return nullptr;
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    return connection;
  }

  const std::string conninfo_;
  const std::size_t max_;
  std::mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;  // guarded by mu_
  std::deque<Ticket*> queue_;                            // guarded by mu_; oldest first
  std::size_t in_use_ = 0;  // guarded by mu_; slots held, including those handed to tickets
};

// ---- Database ---------------------------------------------------------------------------------

Database::Database(StoreOptions options) : options_(std::move(options)) {
  pool_ = std::make_unique<Pool>(
      PrimaryConninfo(options_.conninfo, static_cast<int>(options_.connect_timeout.count())),
      options_.max_connections);
  if (!options_.read_conninfo.empty()) {
    // Not PrimaryConninfo: a read replica is a standby (prefer-standby is the caller's).
    std::string read = options_.read_conninfo;
    if (read.rfind("postgres", 0) != 0 && read.find("connect_timeout") == std::string::npos) {
      read += " connect_timeout=" + std::to_string(options_.connect_timeout.count());
    }
    read_pool_ =
        std::make_unique<Pool>(read, std::max<std::size_t>(2, options_.max_connections / 2));
  }
}

Database::~Database() = default;

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const StoreOptions& options,
                                                         std::chrono::seconds wait_for_database) {
  std::unique_ptr<Database> store(new Database(options));
  auto deadline = std::chrono::steady_clock::now() + wait_for_database;
  while (true) {
    absl::StatusOr<int> version = absl::UnavailableError("not tried");
    absl::Status role;
    auto status = store->Run("apply schema migrations", [&](pqxx::connection_base& c) {
      role = store->CheckStandbyAckRole(c);
      if (role.ok()) version = ApplyMigrations(c);
      return absl::OkStatus();
    });
    if (status.ok() && !role.ok()) return role;
    if (status.ok() && !version.ok()) return version.status();
    if (status.ok()) {
      store->schema_version_ = *version;
      return store;
    }
    if (!absl::IsUnavailable(status) || std::chrono::steady_clock::now() >= deadline) {
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

absl::Status Database::CheckStandbyAckRole(pqxx::connection_base& connection) const {
  if (options_.standby_ack_wait.count() <= 0) return absl::OkStatus();
  pqxx::nontransaction tx{connection};
  if (tx.exec1("SELECT pg_has_role('pg_read_all_stats', 'USAGE')")[0].as<bool>()) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      "--standby-ack-wait: the database role cannot read the standbys' positions in "
      "pg_stat_replication; GRANT pg_read_all_stats TO the collector's role (or set "
      "--standby-ack-wait 0)");
}

absl::Status Database::AwaitStandbyFlush(pqxx::connection_base& connection,
                                         const std::string& run_id) {
  if (options_.standby_ack_wait.count() <= 0) return absl::OkStatus();
  const auto deadline = std::chrono::steady_clock::now() + options_.standby_ack_wait;
  pqxx::nontransaction tx{connection};
  // This server's flush position after the commit returned: at or past the commit record.
  const std::string flushed = tx.exec1("SELECT pg_current_wal_flush_lsn()::text")[0].c_str();
  auto pause = std::chrono::milliseconds(2);
  while (true) {
    // Usually true at once: a synchronous standby had flushed the commit before it returned.
    if (tx.exec_params1("SELECT coalesce(bool_or(flush_lsn >= $1::pg_lsn), false)"
                        " FROM pg_stat_replication",
                        flushed)[0]
            .as<bool>()) {
      return absl::OkStatus();
    }
    if (std::chrono::steady_clock::now() + pause > deadline) {
      return absl::UnavailableError(
          "store run " + run_id +
          ": committed on the primary, but no standby has flushed it within " +
          std::to_string(options_.standby_ack_wait.count()) +
          " ms (a failover in progress, or no standby streaming); retry");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

absl::Status Database::Run(const std::string& what,
                           const std::function<absl::Status(pqxx::connection_base&)>& work) {
  auto backoff = options_.first_backoff;
  std::string last_error;
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    if (attempt > 1) {
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
    std::unique_ptr<pqxx::connection> connection;
    try {
      connection = pool_->Take();  // frees its slot itself when connecting fails
    } catch (const pqxx::broken_connection& e) {
      last_error = e.what();
      continue;
    }
    try {
      absl::Status status = work(*connection);
      pool_->Release(std::move(connection));
      return status;
    } catch (const pqxx::broken_connection& e) {
      last_error = e.what();
      pool_->Release(nullptr);
    } catch (const pqxx::in_doubt_error& e) {
      // The commit's fate is unknown; retrying is safe because every unit is idempotent.
      last_error = e.what();
      pool_->Release(nullptr);
    } catch (const pqxx::transaction_rollback& e) {  // serialization failure, deadlock
      last_error = e.what();
      pool_->Release(std::move(connection));
    } catch (const pqxx::sql_error& e) {
      if (!IsConnectionLoss(e, *connection)) {
        pool_->Release(std::move(connection));
        return absl::InternalError(what + ": " + e.what());
      }
      last_error = e.what();  // the server went away mid-statement: a lost connection
      pool_->Release(nullptr);
    } catch (const std::exception& e) {
      if (connection->is_open()) {
        pool_->Release(std::move(connection));
        return absl::InternalError(what + ": " + e.what());
      }
      // libpqxx reports a COPY whose server went away as a plain pqxx::failure ("Error
      // writing to table: server closed the connection"); the closed connection says what
      // it is: a lost connection, retried like the others.
      last_error = e.what();
      pool_->Release(nullptr);
    }
  }
  // libpq's messages span lines ("...refused\n\tIs the server running..."): one line reads better.
  std::string one_line;
  for (char c : last_error) {
    bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space) {
      one_line += c;
    } else if (!one_line.empty() && one_line.back() != ' ') {
      one_line += ' ';
    }
  }
  while (!one_line.empty() && one_line.back() == ' ') one_line.pop_back();
  last_error = one_line;
  return absl::UnavailableError(what + ": database unavailable after " +
                                std::to_string(options_.attempts) + " attempts: " + last_error);
}

double Database::ReplicaLag(pqxx::connection_base& connection) {
  pqxx::nontransaction tx{connection};
  // Replayed all it received: no lag (an idle primary sends nothing, and that is not lag).
  // Receiving nothing (no WAL receiver: the primary is gone or the link is down): unbounded,
  // as nothing says how far behind it is. A primary given as the replica: none.
  return tx
      .exec1(
          "SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0"
          " WHEN NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver) THEN 'Infinity'::float8"
          " WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0"
          " ELSE COALESCE(EXTRACT(EPOCH FROM clock_timestamp() -"
          " pg_last_xact_replay_timestamp())::float8, 'Infinity'::float8) END")[0]
      .as<double>();
}

std::optional<double> Database::MeasureReadLag() {
  if (!read_pool_) return std::nullopt;
  std::unique_ptr<pqxx::connection> connection;
  try {
    connection = read_pool_->Take();
    double lag = ReplicaLag(*connection);
    read_pool_->Release(std::move(connection));
    return lag;
  } catch (const std::exception&) {
    if (connection) read_pool_->Release(nullptr);  // Take frees its own slot when it throws
    return std::nullopt;
  }
}

absl::Status Database::Read(const std::string& what,
                            const std::function<absl::Status(pqxx::connection_base&)>& work) {
  if (!read_pool_) return Run(what, work);
  std::unique_ptr<pqxx::connection> connection;
  try {
    connection = read_pool_->Take();
    double lag = ReplicaLag(*connection);
    if (lag * 1000 > static_cast<double>(options_.max_read_lag.count())) {
      read_pool_->Release(std::move(connection));
      return Run(what, work);  // too far behind: the primary answers
    }
    absl::Status status = work(*connection);
    read_pool_->Release(std::move(connection));
    return status;
  } catch (const pqxx::sql_error& e) {
    if (connection && connection->is_open() && !IsConnectionLoss(e, *connection)) {
      read_pool_->Release(std::move(connection));
      return absl::InternalError(what + ": " + e.what());
    }
  } catch (const std::exception&) {
    // Unreachable, lost or otherwise failing replica: the primary answers instead.
  }
  if (connection) read_pool_->Release(nullptr);
  return Run(what, work);
}

bool Database::Ping() {
  return Run("ping",
             [](pqxx::connection_base& c) {
               pqxx::nontransaction tx{c};
               tx.exec("SELECT 1");
               return absl::OkStatus();
             })
      .ok();
}

}  // namespace devtime::store
