// The collector's Store on a test's own PostgreSQL database, for tests of the storage side
// without a collector process. Header-only: devtime_test_support does not link the
// collector, the tests that include this do.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "services/collector/store.h"
#include "tests/support/test_database.h"

namespace devtime::testing {

// Opens a Store on `db` (applying the migrations), as the collector does at start.
inline absl::StatusOr<std::unique_ptr<collector::Store>> OpenStore(const TestDatabase& db) {
  collector::StoreOptions options;
  options.conninfo = db.conninfo();
  return collector::Store::Open(options);
}

// A test with its own database and a Store open on it.
class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenStore(db_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  TestDatabase db_;
  std::unique_ptr<collector::Store> store_;
};

}  // namespace devtime::testing
