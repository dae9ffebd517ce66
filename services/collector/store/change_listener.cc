#include "services/collector/store/change_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <iostream>
#include <utility>

#include "pqxx/pqxx"
#include "services/collector/store/database.h"

namespace devtime::store {
namespace {

// key=value connection strings get keepalives and a connect timeout unless they name them,
// and go to the primary when they name several hosts (PrimaryConninfo): NOTIFY is sent on
// the primary, and a standby refuses LISTEN. URIs are left as they are (appending to a URI
// would change its meaning).
std::string ListenConninfo(const std::string& conninfo) {
  if (conninfo.rfind("postgres", 0) == 0) return conninfo;
  std::string out = PrimaryConninfo(conninfo, 5);
  if (out.find("keepalives") == std::string::npos) {
    out += " keepalives=1 keepalives_idle=30 keepalives_interval=10 keepalives_count=3";
  }
  return out;
}

class Receiver final : public pqxx::notification_receiver {
 public:
  // Constructing a receiver sends LISTEN on `connection` (libpqxx 6.4).
  Receiver(pqxx::connection_base& connection, const std::string& channel,
           std::vector<Notification>& sink)
      : pqxx::notification_receiver(connection, channel), sink_(sink) {}

  void operator()(const std::string& payload, int) override {
    sink_.push_back({channel(), payload});
  }

 private:
  std::vector<Notification>& sink_;
};

int Millis(std::chrono::steady_clock::time_point until) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  until - std::chrono::steady_clock::now())
                  .count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

}  // namespace

class ChangeListener::Connection {
 public:
  Connection(const std::string& conninfo, const std::vector<std::string>& channels)
      : connection_(conninfo) {
    for (const auto& channel : channels) {
      receivers_.push_back(std::make_unique<Receiver>(connection_, channel, received_));
    }
  }
  ~Connection() { receivers_.clear(); }  // before the connection they UNLISTEN on

  int socket() const { return connection_.sock(); }
  // Reads what the socket holds and returns the notifications it completed; throws
  // pqxx::broken_connection when the connection is gone.
  std::vector<Notification> Drain() {
    connection_.get_notifs();
    if (!connection_.is_open()) throw pqxx::broken_connection("LISTEN connection closed");
    return std::exchange(received_, {});
  }

 private:
  pqxx::connection connection_;
  std::vector<Notification> received_;  // filled by the receivers inside get_notifs
  std::vector<std::unique_ptr<Receiver>> receivers_;
};

ChangeListener::ChangeListener(ChangeListenerOptions options)
    : options_(std::move(options)),
      backoff_(options_.first_backoff),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

ChangeListener::~ChangeListener() {
  Disconnect();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void ChangeListener::Interrupt() {
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

bool ChangeListener::Connect() {
  try {
    connection_ =
        std::make_unique<Connection>(ListenConninfo(options_.conninfo), options_.channels);
    backoff_ = options_.first_backoff;
    listening_ = true;
    return true;
  } catch (const std::exception& e) {
    connection_.reset();
    std::cerr << "devtime-collector: LISTEN connection: " << e.what() << "; retrying in "
              << backoff_.count() << " ms" << std::endl;
    next_attempt_ = std::chrono::steady_clock::now() + backoff_;
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    return false;
  }
}

void ChangeListener::Disconnect() {
  listening_ = false;
  connection_.reset();
}

ChangeListener::Wakeup ChangeListener::Wait(std::chrono::steady_clock::time_point deadline) {
  Wakeup wakeup;
  while (true) {
    if (!connection_ && std::chrono::steady_clock::now() >= next_attempt_ && Connect()) {
      wakeup.resubscribed = true;
      return wakeup;  // the caller re-reads everything; anything newer wakes the next Wait
    }
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {connection_ ? connection_->socket() : -1, POLLIN, 0}};
    auto until = connection_ ? deadline : std::min(deadline, next_attempt_);
    int ready = poll(fds, 2, Millis(until));
    if (ready < 0 && errno != EINTR) return wakeup;
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      (void)!read(wake_fd_, &count, sizeof count);
      return wakeup;
    }
    if (connection_ && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      try {
        wakeup.notifications = connection_->Drain();
      } catch (const std::exception& e) {
        std::cerr << "devtime-collector: LISTEN connection lost: " << e.what() << std::endl;
        Disconnect();
        next_attempt_ = std::chrono::steady_clock::now();  // reconnect at once, then back off
      }
      if (!wakeup.notifications.empty()) return wakeup;
    }
    if (std::chrono::steady_clock::now() >= deadline) return wakeup;
  }
}

}  // namespace devtime::store
