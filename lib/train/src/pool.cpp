// The persistent worker pool (pool.hpp).
#include "pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "attn/core/parallel.hpp"

namespace attn::train::detail {

namespace {

class Pool {
public:
    ~Pool() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& t : workers_) t.join();
    }

    void run(int64_t n, int helpers, const std::function<void(int64_t, int)>& fn) {
        std::lock_guard<std::mutex> one_run(run_mu_);
        {
            std::unique_lock<std::mutex> lk(mu_);
            while (static_cast<int>(workers_.size()) < helpers) {
                const int id = static_cast<int>(workers_.size()) + 1;
                workers_.emplace_back([this, id] { work(id); });
            }
            fn_ = &fn;
            n_ = n;
            next_.store(0);
            helpers_ = helpers;
            pending_ = helpers;
            err_ = nullptr;
            ++gen_;
        }
        wake_.notify_all();
        loop(0);
        std::unique_lock<std::mutex> lk(mu_);
        done_.wait(lk, [&] { return pending_ == 0; });
        fn_ = nullptr;
        if (err_) std::rethrow_exception(err_);
    }

private:
    void loop(int tid) {
        try {
            for (int64_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n_;) (*fn_)(i, tid);
        } catch (...) {
            std::lock_guard<std::mutex> lk(mu_);
            if (!err_) err_ = std::current_exception();
            next_.store(n_);
        }
    }

    void work(int id) {
        uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lk(mu_);
                wake_.wait(lk, [&] { return stop_ || (gen_ != seen && id <= helpers_); });
                if (stop_) return;
                seen = gen_;
            }
            loop(id);
            {
                std::lock_guard<std::mutex> lk(mu_);
                --pending_;
            }
            done_.notify_one();
        }
    }

    std::mutex run_mu_, mu_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> workers_;
    const std::function<void(int64_t, int)>* fn_ = nullptr;
    int64_t n_ = 0;
    std::atomic<int64_t> next_{0};
    int helpers_ = 0, pending_ = 0;
    uint64_t gen_ = 0;
    bool stop_ = false;
    std::exception_ptr err_;
};

}  // namespace

void pool_for(int64_t n, int threads, const std::function<void(int64_t, int)>& fn) {
    const int t = static_cast<int>(std::min<int64_t>(resolve_threads(threads), std::max<int64_t>(n, 1)));
    if (t <= 1) {
        for (int64_t i = 0; i < n; ++i) fn(i, 0);
        return;
    }
    static Pool pool;
    pool.run(n, t - 1, fn);
}

}  // namespace attn::train::detail
