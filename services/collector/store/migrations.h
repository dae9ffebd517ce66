// The collector's PostgreSQL schema as an ordered list of versioned migrations.
//
// Applied at collector start, each in its own transaction, under an advisory lock so that
// several collectors starting against one database apply each migration exactly once.
// A migration, once released, is never edited: changes are new migrations.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pqxx/pqxx"

namespace devtime::store {

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

// All migrations in version order.
const std::vector<Migration>& AllMigrations();

// Applies the migrations that `connection`'s database lacks; returns the schema version
// now in force. Fails (FAILED_PRECONDITION) if the database is at a NEWER version than this
// binary knows, so an old collector never writes into a schema it does not understand.
absl::StatusOr<int> ApplyMigrations(pqxx::connection_base& connection);

}  // namespace devtime::store
