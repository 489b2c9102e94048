// attn/core/parallel.hpp: a minimal parallel-for over a persistent pool of threads.
//
// Work is split into n items; item i always does the same computation
// whatever the thread count, so results are reproducible (give each item its
// own Rng stream, never share one generator between threads).
//
// The threads are kept between calls (src/parallel.cpp says why: starting them
// cost more than the small jobs they ran). A call nested in another's items, or
// made while another thread's job holds the pool, starts threads of its own.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attn {

// 0 or negative: every hardware thread.
inline int resolve_threads(int threads) {
    if (threads > 0) return threads;
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

namespace detail {
// Runs fn(i, thread_id) for i in [0, n) on the pool with `threads` threads, the
// caller's included. False, having run nothing, when the pool is busy or the call
// is nested in one of its jobs.
bool pool_run(int64_t n, int threads, const std::function<void(int64_t, int)>& fn);
}  // namespace detail

// Calls fn(i, thread_id) for i in [0, n), items handed out dynamically.
// The first exception thrown by fn is rethrown here after all threads stop.
template <class Fn>
void parallel_for(int64_t n, int threads, Fn&& fn) {
    const int t = static_cast<int>(std::min<int64_t>(resolve_threads(threads), std::max<int64_t>(n, 1)));
    if (t <= 1) {
        for (int64_t i = 0; i < n; ++i) fn(i, 0);
        return;
    }
    if (detail::pool_run(n, t, std::function<void(int64_t, int)>(std::ref(fn)))) return;
    std::atomic<int64_t> next{0};
    std::exception_ptr err;
    std::mutex err_mu;
    auto worker = [&](int tid) {
        try {
            for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) fn(i, tid);
        } catch (...) {
            std::lock_guard<std::mutex> lk(err_mu);
            if (!err) err = std::current_exception();
            next.store(n);
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(t - 1));
    for (int k = 1; k < t; ++k) pool.emplace_back(worker, k);
    worker(0);
    for (auto& th : pool) th.join();
    if (err) std::rethrow_exception(err);
}

}  // namespace attn
