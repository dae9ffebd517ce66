// Who may call the collector, and for what.
//
// Every call carries "authorization: Bearer TOKEN". The admin token (one, from
// --admin-token-file) may do everything; an agent token (issued by `devtimectl agents add
// NAME --host HOST`, stored only as its SHA-256) may read, upload runs for its own host and
// hold its own agent session. Missing or unknown tokens are UNAUTHENTICATED, a known token
// asking for more than its role allows is PERMISSION_DENIED; both are counted
// (devtime_auth_failures_total{reason}). With auth disabled (--no-auth) every caller is admin.
//
// Agent tokens are looked up in PostgreSQL once per `token_cache_ttl` (kTokenCacheTtl, 10 s,
// unless --token-cache-ttl-ms says otherwise) and remembered meanwhile, so a fleet's calls
// and session starts do not each cost a query. A token replaced (`agents add` again for the
// same agent) or deleted stops working on every collector within that TTL, and at once on
// the collector that issued the replacement. Unknown tokens are never remembered (a token
// issued a moment ago works at once). `agents revoke NAME` deletes the agent's token, with
// the same reach. A session already open when its token is replaced or revoked is closed
// within the same bound: the session hub (session_hub.h) re-checks the tokens of all its
// sessions with LostTokens, one query every half TTL, and at once after AddAgent or
// RevokeAgent on this collector.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "services/collector/metrics/collector_metrics.h"
#include "services/collector/store/database.h"

namespace devtime::collector {

enum class Role { kAdmin, kAgent };

inline constexpr std::chrono::milliseconds kTokenCacheTtl{10000};

struct Caller {
  Role role;
  std::string agent;  // agent name (agents only)
  std::string host;   // the host the agent may write runs for (agents only)
  // Lowercase hex SHA-256 of the token (agents only): what an open session is re-checked by.
  std::string token_sha256;
};

class Authorizer {
 public:
  // `admin_token` empty = auth disabled.
  Authorizer(store::Database& store, CollectorMetrics& metrics, const std::string& admin_token,
             std::chrono::milliseconds token_cache_ttl = kTokenCacheTtl);

  bool enabled() const { return !admin_sha256_.empty(); }

  // The caller, or UNAUTHENTICATED; UNAVAILABLE when the token store cannot be reached.
  // (Any server context: synchronous handlers' and callback reactors' alike.)
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContextBase& context);
  // The caller if it is an admin, else PERMISSION_DENIED naming `action`.
  absl::StatusOr<Caller> RequireAdmin(const grpc::ServerContextBase& context,
                                      const std::string& action);
  // Counts a PERMISSION_DENIED decided by a handler and returns it.
  absl::Status Forbidden(const std::string& message);

  // Issues (or replaces) the token of agent `name` writing for `host`; returns the token,
  // which is not stored anywhere in clear.
  absl::StatusOr<std::string> IssueAgentToken(const std::string& name, const std::string& host);
  // Deletes the token of agent `name`; NOT_FOUND naming it when it holds none.
  absl::Status RevokeAgentToken(const std::string& name);
  // Of `agents` (token digest -> the agent it was issued to), the digests that are no longer
  // valid, each with why ("... was replaced ..." or "... was revoked ..."): one query for all.
  // Forgets them here at once.
  absl::StatusOr<std::map<std::string, std::string>> LostTokens(
      const std::map<std::string, std::string>& agents);

 private:
  struct Remembered {
    Caller caller;
    std::chrono::steady_clock::time_point until;
  };
  // The agent holding the token with this digest: remembered, else from the database.
  absl::StatusOr<std::optional<Caller>> LookUpAgent(const std::string& digest);

  store::Database& store_;
  CollectorMetrics& metrics_;
  std::string admin_sha256_;
  const std::chrono::milliseconds token_cache_ttl_;
  std::mutex mu_;
  std::unordered_map<std::string, Remembered> remembered_;  // by digest; guarded by mu_
};

// Lowercase hex SHA-256 of `text`.
std::string Sha256Hex(const std::string& text);
// A new random token: "dt_" + 64 hex characters.
std::string NewToken();
// Reads the admin token from `path`, creating the file (mode 0600) with a new token if it
// does not exist.
absl::StatusOr<std::string> LoadOrCreateAdminToken(const std::string& path, bool* created);

}  // namespace devtime::collector
