// The collector's store (store::Database + RunStore) on a test's own PostgreSQL database, for
// tests of the storage side
// without a collector process. Header-only: devtime_test_support does not link the
// collector, the tests that include this do.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "services/collector/store/run_store.h"
#include "tests/support/test_database.h"

namespace devtime::testing {

// Opens the database `db` (applying the migrations), as the collector does at start.
inline absl::StatusOr<std::unique_ptr<store::Database>> OpenStore(const TestDatabase& db) {
  store::StoreOptions options;
  options.conninfo = db.conninfo();
  return store::Database::Open(options);
}

// A test with its own database, open, and a RunStore on it.
class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenStore(db_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    runs_ = std::make_unique<store::RunStore>(*store_);
  }

  TestDatabase db_;
  std::unique_ptr<store::Database> store_;
  std::unique_ptr<store::RunStore> runs_;
};

}  // namespace devtime::testing
