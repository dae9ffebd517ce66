#include "services/collector/rpc/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "proto/wire/validation.h"

namespace devtime::collector {
namespace {

std::string Hex(const unsigned char* bytes, std::size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

// Remembered tokens beyond this many make an insert drop the expired ones first.
constexpr std::size_t kPruneAbove = 4096;

std::optional<std::string> BearerToken(const grpc::ServerContextBase& context) {
  auto it = context.client_metadata().find("authorization");
  if (it == context.client_metadata().end()) return std::nullopt;
  std::string value(it->second.data(), it->second.size());
  const std::string prefix = "Bearer ";
  if (value.rfind(prefix, 0) != 0) return std::nullopt;
  return value.substr(prefix.size());
}

}  // namespace

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return Hex(digest, sizeof digest);
}

std::string NewToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) std::abort();  // no entropy: nothing safe to do
  return "dt_" + Hex(bytes, sizeof bytes);
}

absl::StatusOr<std::string> LoadOrCreateAdminToken(const std::string& path, bool* created) {
  *created = false;
  if (std::ifstream in(path); in) {
    // Issue 26: others may not write it (PERMISSION_DENIED), reading it is warned about.
    if (auto mode = wire::CheckSecretFileMode(path, "admin token file", std::cerr); !mode.ok()) {
      return mode;
    }
    std::string token;
    std::getline(in, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (token.size() < 16) {
      return absl::InvalidArgumentError("admin token file " + path +
                                        " holds no token of at least 16 characters");
    }
    return token;
  }
  std::string token = NewToken();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return absl::InternalError("cannot create admin token file " + path);
  std::string line = token + "\n";
  bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::fsync(fd);
  ::close(fd);
  if (!written) return absl::InternalError("cannot write admin token file " + path);
  *created = true;
  return token;
}

Authorizer::Authorizer(store::Database& store, CollectorMetrics& metrics,
                       const std::string& admin_token, std::chrono::milliseconds token_cache_ttl)
    : store_(store),
      metrics_(metrics),
      admin_sha256_(admin_token.empty() ? "" : Sha256Hex(admin_token)),
      token_cache_ttl_(token_cache_ttl) {}

absl::StatusOr<std::optional<Caller>> Authorizer::LookUpAgent(const std::string& digest) {
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    auto it = remembered_.find(digest);
    if (it != remembered_.end() && it->second.until > now) return it->second.caller;
  }
  std::optional<Caller> agent;
  auto status = store_.Run("look up agent token", [&](pqxx::connection_base& c) {
    pqxx::read_transaction tx{c};
    auto rows =
        tx.exec_params("SELECT name, host FROM agent_tokens WHERE token_sha256 = $1", digest);
    if (!rows.empty()) {
      agent =
          Caller{Role::kAgent, rows[0][0].as<std::string>(), rows[0][1].as<std::string>(), digest};
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (agent && token_cache_ttl_.count() > 0) {
    std::lock_guard lock(mu_);
    if (remembered_.size() >= kPruneAbove) {
      std::erase_if(remembered_, [&](const auto& entry) { return entry.second.until <= now; });
    }
    // `now` is from before the query: the TTL bounds the time since the database said so.
    remembered_[digest] = {*agent, now + token_cache_ttl_};
  }
  return agent;
}

absl::StatusOr<Caller> Authorizer::Authenticate(const grpc::ServerContextBase& context) {
  if (!enabled()) return Caller{Role::kAdmin, "", "", ""};
  auto token = BearerToken(context);
  if (!token) {
    metrics_.RecordAuthFailure(AuthFailure::kMissing);
    return absl::UnauthenticatedError(
        "no token: pass --token-file (devtimectl, devtime-agent upload) or token_file "
        "(agent.yaml)");
  }
  std::string digest = Sha256Hex(*token);
  if (digest.size() == admin_sha256_.size() &&
      CRYPTO_memcmp(digest.data(), admin_sha256_.data(), digest.size()) == 0) {
    return Caller{Role::kAdmin, "", "", ""};
  }
  auto agent = LookUpAgent(digest);
  if (!agent.ok()) return agent.status();
  if (!*agent) {
    metrics_.RecordAuthFailure(AuthFailure::kInvalid);
    return absl::UnauthenticatedError("unknown token");
  }
  return **agent;
}

absl::StatusOr<Caller> Authorizer::RequireAdmin(const grpc::ServerContextBase& context,
                                                const std::string& action) {
  auto caller = Authenticate(context);
  if (!caller.ok()) return caller;
  if (caller->role != Role::kAdmin) {
    return Forbidden(action + " needs the admin token (agent " + caller->agent + " called)");
  }
  return caller;
}

absl::Status Authorizer::Forbidden(const std::string& message) {
  metrics_.RecordAuthFailure(AuthFailure::kForbidden);
  return absl::PermissionDeniedError(message);
}

absl::StatusOr<std::string> Authorizer::IssueAgentToken(const std::string& name,
                                                        const std::string& host) {
  std::string token = NewToken();
  auto status = store_.Run("issue token for agent " + name, [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    tx.exec_params(
        "INSERT INTO agent_tokens (name, host, token_sha256) VALUES ($1, $2, $3)"
        " ON CONFLICT (name) DO UPDATE SET host = EXCLUDED.host,"
        " token_sha256 = EXCLUDED.token_sha256, created_at = now()",
        name, host, Sha256Hex(token));
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  {
    // The agent's previous token stops working here at once (elsewhere within the TTL).
    std::lock_guard lock(mu_);
    std::erase_if(remembered_,
                  [&](const auto& entry) { return entry.second.caller.agent == name; });
  }
  return token;
}

absl::Status Authorizer::RevokeAgentToken(const std::string& name) {
  bool deleted = false;
  auto status = store_.Run("revoke token of agent " + name, [&](pqxx::connection_base& c) {
    pqxx::work tx{c};
    deleted = tx.exec_params("DELETE FROM agent_tokens WHERE name = $1", name).affected_rows() > 0;
    tx.commit();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (!deleted) {
    return absl::NotFoundError("agent '" + name +
                               "' holds no token, so there is nothing to revoke (devtimectl "
                               "agents add issues one)");
  }
  std::lock_guard lock(mu_);
  std::erase_if(remembered_, [&](const auto& entry) { return entry.second.caller.agent == name; });
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> Authorizer::LostTokens(
    const std::map<std::string, std::string>& agents) {
  std::map<std::string, std::string> lost;
  if (agents.empty()) return lost;
  std::vector<std::string> digests, names;
  for (const auto& [digest, name] : agents) {
    digests.push_back(digest);
    names.push_back(name);
  }
  // The digests no token has any more, and whether their agent holds another one (replaced)
  // or none (revoked); both lookups use agent_tokens' unique indexes.
  auto status = store_.Run("re-check session tokens", [&](pqxx::connection_base& c) {
    lost.clear();
    pqxx::read_transaction tx{c};
    auto rows = tx.exec_params(
        "SELECT s.digest, s.name, EXISTS (SELECT 1 FROM agent_tokens n WHERE n.name = s.name)"
        " FROM unnest($1::text[], $2::text[]) AS s(digest, name)"
        " WHERE NOT EXISTS (SELECT 1 FROM agent_tokens t WHERE t.token_sha256 = s.digest)",
        store::BinaryTextArray(digests), store::BinaryTextArray(names));
    for (const auto& row : rows) {
      const std::string name = row[1].as<std::string>();
      lost[row[0].as<std::string>()] =
          row[2].as<bool>()
              ? "the token of agent '" + name +
                    "' was replaced (devtimectl agents add): reconnect with the new token"
              : "the token of agent '" + name + "' was revoked (devtimectl agents revoke)";
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  if (!lost.empty()) {
    std::lock_guard lock(mu_);
    for (const auto& [digest, why] : lost) remembered_.erase(digest);
  }
  return lost;
}

}  // namespace devtime::collector
