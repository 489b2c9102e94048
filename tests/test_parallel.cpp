// Tests of parallel_for (attn/core/parallel.hpp) and the persistent pool behind it:
// every item runs exactly once at any thread count, exceptions come back to the
// caller, nested and concurrent calls finish (they fall back to threads of their own),
// and a forked child, which has none of its parent's pool threads, still gets its work
// done (attn bench times every case in a forked child).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "attn/core/parallel.hpp"

namespace {

// Runs parallel_for over n items and says whether each ran exactly once.
bool each_once(int64_t n, int threads) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    attn::parallel_for(n, threads, [&](int64_t i, int tid) {
        if (tid < 0 || tid >= threads) throw std::logic_error("thread id out of range");
        hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (const auto& h : hits)
        if (h.load() != 1) return false;
    return true;
}

}  // namespace

TEST_CASE("parallel_for: every item exactly once, at 1 to 8 threads, calls back to back") {
    for (int threads = 1; threads <= 8; ++threads)
        for (int64_t n : {0, 1, 2, 3, 17, 1000}) {
            INFO("threads " << threads << ", n " << n);
            CHECK(each_once(n, threads));
        }
    // many small jobs in a row: the pool's workers must see every generation
    bool all = true;
    for (int k = 0; k < 2000 && all; ++k) all = each_once(5, 2 + k % 3);
    CHECK(all);
}

TEST_CASE("parallel_for: an exception in an item reaches the caller, and the pool still works after") {
    CHECK_THROWS_AS(attn::parallel_for(100, 3,
                                       [](int64_t i, int) {
                                           if (i == 37) throw std::runtime_error("item 37");
                                       }),
                    std::runtime_error);
    CHECK(each_once(100, 3));
}

TEST_CASE("parallel_for: nested and concurrent calls finish and run every item") {
    std::atomic<int64_t> inner{0};
    attn::parallel_for(4, 2, [&](int64_t, int) {
        attn::parallel_for(10, 2, [&](int64_t, int) { inner.fetch_add(1); });  // the pool is busy: own threads
    });
    CHECK(inner.load() == 40);
    // two threads calling at once: one gets the pool, the other starts its own threads
    std::atomic<bool> ok1{false}, ok2{false};
    std::thread a([&] {
        bool all = true;
        for (int k = 0; k < 300; ++k) all = all && each_once(64, 2);
        ok1 = all;
    });
    std::thread b([&] {
        bool all = true;
        for (int k = 0; k < 300; ++k) all = all && each_once(64, 2);
        ok2 = all;
    });
    a.join();
    b.join();
    CHECK(ok1.load());
    CHECK(ok2.load());
}

TEST_CASE("parallel_for: a forked child gets its own pool (no wait for its parent's threads)") {
    REQUIRE(each_once(64, 2));  // the parent's pool has started its worker
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(each_once(64, 2) && each_once(1000, 3) ? 0 : 1);
    int status = 0;
    bool done = false;
    for (int k = 0; k < 200 && !done; ++k) {  // up to 20 s: a hang is a failure, not a stuck test
        done = ::waitpid(pid, &status, WNOHANG) == pid;
        if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!done) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
    }
    CHECK_MESSAGE(done, "the child's parallel_for hung");
    CHECK((done && WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(each_once(64, 2));  // and the parent's pool still works
}
