// Who may call the collector, and for what.
//
// Every call carries "authorization: Bearer TOKEN". The admin token (one, from
// --admin-token-file) may do everything; an agent token (issued by `devtimectl agents add
// NAME --host HOST`, stored only as its SHA-256) may read, upload runs for its own host and
// hold its own agent session. Missing or unknown tokens are UNAUTHENTICATED, a known token
// asking for more than its role allows is PERMISSION_DENIED; both are counted
// (devtime_auth_failures_total{reason}). With auth disabled (--no-auth) every caller is admin.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "services/collector/metrics/collector_metrics.h"
#include "services/collector/store/database.h"

namespace devtime::collector {

enum class Role { kAdmin, kAgent };

struct Caller {
  Role role;
  std::string agent;  // agent name (agents only)
  std::string host;   // the host the agent may write runs for (agents only)
};

class Authorizer {
 public:
  // `admin_token` empty = auth disabled.
  Authorizer(store::Database& store, CollectorMetrics& metrics, const std::string& admin_token);

  bool enabled() const { return !admin_sha256_.empty(); }

  // The caller, or UNAUTHENTICATED; UNAVAILABLE when the token store cannot be reached.
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContext& context);
  // The caller if it is an admin, else PERMISSION_DENIED naming `action`.
  absl::StatusOr<Caller> RequireAdmin(const grpc::ServerContext& context,
                                      const std::string& action);
  // Counts a PERMISSION_DENIED decided by a handler and returns it.
  absl::Status Forbidden(const std::string& message);

  // Issues (or replaces) the token of agent `name` writing for `host`; returns the token,
  // which is not stored anywhere in clear.
  absl::StatusOr<std::string> IssueAgentToken(const std::string& name, const std::string& host);

 private:
  store::Database& store_;
  CollectorMetrics& metrics_;
  std::string admin_sha256_;
};

// Lowercase hex SHA-256 of `text`.
std::string Sha256Hex(const std::string& text);
// A new random token: "dt_" + 64 hex characters.
std::string NewToken();
// Reads the admin token from `path`, creating the file (mode 0600) with a new token if it
// does not exist.
absl::StatusOr<std::string> LoadOrCreateAdminToken(const std::string& path, bool* created);

}  // namespace devtime::collector
