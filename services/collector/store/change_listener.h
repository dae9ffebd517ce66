// devtime::store — one LISTEN connection: PostgreSQL tells this collector when jobs or run-now
// requests change (job_store.h's writers NOTIFY in their own transactions), so nobody polls.
//
// The connection is its own, outside the Database pool (a pooled connection is shared and
// would drop its LISTENs when it is recycled). Wait() sleeps in poll(2) on the connection's
// socket, so an idle collector sends PostgreSQL nothing. A lost connection is reopened with
// backoff (doubling from first_backoff to max_backoff); notifications sent while it was down
// are lost, which is why the first Wait after every (re)connection says `resubscribed` and
// the caller re-reads everything it watches. TCP keepalives (when the connection string is
// of the key=value kind and names none) notice a peer that vanished without closing.
//
// Thread-safety: Wait must be called from one thread at a time; Interrupt from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace devtime::store {

struct ChangeListenerOptions {
  std::string conninfo;               // libpq connection string (as StoreOptions::conninfo)
  std::vector<std::string> channels;  // LISTEN on each
  std::chrono::milliseconds first_backoff{500};
  // A failover takes seconds; a listener backed off to half a minute would leave agents
  // without run-now requests long after it. One attempt per 5 s costs an idle database nothing.
  std::chrono::milliseconds max_backoff{5000};
};

struct Notification {
  std::string channel;
  std::string payload;
};

class ChangeListener {
 public:
  explicit ChangeListener(ChangeListenerOptions options);
  ~ChangeListener();
  ChangeListener(const ChangeListener&) = delete;
  ChangeListener& operator=(const ChangeListener&) = delete;

  struct Wakeup {
    std::vector<Notification> notifications;  // in the order PostgreSQL sent them
    // True on the first return after (re)connecting and LISTENing: what changed while not
    // listening was not heard, so re-read it all.
    bool resubscribed = false;
  };

  // Returns when notifications arrived, on (re)subscribing, when `deadline` passes or after
  // Interrupt(). Connects first when not listening (at most once per backoff step, so a
  // database that is down costs a connection attempt per step, never a busy loop).
  Wakeup Wait(std::chrono::steady_clock::time_point deadline);

  // Makes the running (or the next) Wait return at once.
  void Interrupt();

  bool listening() const { return listening_; }

 private:
  class Connection;  // a pqxx connection and its notification receivers
  bool Connect();    // false (and the next attempt scheduled) when it fails
  void Disconnect();

  const ChangeListenerOptions options_;
  std::unique_ptr<Connection> connection_;
  std::atomic<bool> listening_{false};
  std::chrono::milliseconds backoff_;
  std::chrono::steady_clock::time_point next_attempt_{};
  int wake_fd_ = -1;  // eventfd written by Interrupt
};

}  // namespace devtime::store
