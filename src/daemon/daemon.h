// kjudged: the event loop (signals, heartbeat) on Boost.Asio, a fetch thread that blocks on
// Redis with its own connection, and a pool of job slots that run the pipeline.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "common/config.h"
#include "kjqueue/queue.h"

namespace kj {

class Daemon {
 public:
  explicit Daemon(Config cfg);
  ~Daemon();
  // Runs until SIGTERM/SIGINT, then stops fetching, finishes the jobs in hand and returns 0.
  int run();

 private:
  void fetch_loop();
  void process(const kjqueue::Delivery& d, unsigned slot);
  void heartbeat();
  void request_stop();

  Config cfg_;
  boost::asio::io_context ioc_;
  boost::asio::steady_timer heartbeat_timer_{ioc_};
  std::unique_ptr<kjqueue::Queue> loop_queue_;  // used only from the event loop thread
  boost::asio::thread_pool slots_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable slot_free_;
  unsigned busy_ = 0;
  std::thread fetcher_;
  std::atomic<std::uint64_t> jobs_done_{0};
};

}  // namespace kj
