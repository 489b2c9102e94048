// The measurements behind `attn bench` (see attn/bench/bench.hpp):
// Eigen GEMM throughput, and one timed case in a forked child process so that
// its peak memory (VmHWM) belongs to that case alone.
#include "attn/bench/bench.hpp"
#include "attn/core/stats.hpp"  // median

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <Eigen/Dense>

#include "attn/core/cost.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/cpu/flash_backward.hpp"
#include "attn/nn/backend.hpp"

namespace attn {

double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double measure_gemm(int threads, int64_t n, double seconds) {
    using clock = std::chrono::steady_clock;
    const int t = resolve_threads(threads);
    using Mat = Eigen::MatrixXf;
    std::vector<Mat> A(static_cast<size_t>(t)), Bm(static_cast<size_t>(t)), C(static_cast<size_t>(t));
    for (int i = 0; i < t; ++i) {
        A[i] = Mat::Random(n, n);
        Bm[i] = Mat::Random(n, n);
        C[i] = Mat::Zero(n, n);
    }
    // Warm-up, and the number of products per thread for about `seconds`.
    auto t0 = clock::now();
    C[0].noalias() = A[0] * Bm[0];
    const double one = std::chrono::duration<double>(clock::now() - t0).count();
    const int reps = std::max(1, static_cast<int>(seconds / 3 / std::max(one, 1e-9)));
    double best = 0;
    for (int round = 0; round < 3; ++round) {  // best of 3: the machine is shared
        t0 = clock::now();
        parallel_for(t, t, [&](int64_t i, int) {
            for (int r = 0; r < reps; ++r) C[i].noalias() = A[i] * Bm[i];
        });
        const double s = std::chrono::duration<double>(clock::now() - t0).count();
        best = std::max(best, 2.0 * static_cast<double>(n) * n * n * reps * t / s / 1e9);
    }
    return best;
}

double bench_flops(const BenchCase& c) {
    return attention_flops(c.B, c.H, c.T, c.T, c.Dk, c.Dk, c.mask()) * (c.backward ? kBackwardFlopFactor : 1.0);
}

namespace {

// A field of /proc/self/status in bytes ("VmHWM", "VmRSS"); 0 if unreadable.
double proc_status_bytes(const char* key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const size_t klen = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, klen, key) == 0 && line.size() > klen && line[klen] == ':') {
            std::istringstream ss(line.substr(klen + 1));
            double kb = 0;
            ss >> kb;
            return kb * 1024.0;
        }
    return 0;
}

// What the child sends back through the pipe.
struct Wire {
    int ok;
    int ntimes;
    double times[kBenchMaxReps];
    double cpu[kBenchMaxReps];  // process CPU seconds (all threads) of each timed run
    double peak_rss, base_rss, err_vs_fp32, scratch_bytes;
    char error[512];
};

// q, k, v (B, H, T, Dk) ~ N(0, 1), one RNG stream each (filled in parallel);
// fixed seed: every backend, CPU or GPU, sees the same numbers.
void random_qkv(const BenchCase& c, Tensor& q, Tensor& k, Tensor& v) {
    Tensor* ts[3] = {&q, &k, &v};
    for (Tensor* t : ts) *t = Tensor({c.B, c.H, c.T, c.Dk});
    parallel_for(3, c.threads, [&](int64_t i, int) {
        Rng r(c.seed, static_cast<uint64_t>(i));
        for (float& x : ts[i]->data) x = r.normal();
    });
}

// Runs in the child: everything of one case. Never returns.
[[noreturn]] void child_main(const BenchCase& c, int fd) {
    Wire w{};
    w.err_vs_fp32 = -1;
    w.scratch_bytes = -1;
    try {
        Tensor q, k, v;
        random_qkv(c, q, k, v);
        const Mask mask = c.mask();
        const AttentionOptions opt;
        // backward: dO ~ N(0, 1) (its own stream), and for flash the forward's O and L, made once
        Tensor dout, fwd_out, lse;
        if (c.backward) {
            dout = Tensor({c.B, c.H, c.T, c.Dk});
            Rng r(c.seed, 3);
            for (float& x : dout.data) x = r.normal();
            if (c.backend == Backend::Flash)
                fwd_out = attention_flash_with("auto", q, k, v, mask, opt, c.threads, &lse);
        }
        auto run = [&]() -> Tensor {
            if (!c.backward) return attention(c.backend, q, k, v, mask, opt, nullptr, c.threads);
            if (c.backend == Backend::Flash) {
                FlashBackwardStats st;
                AttentionGrads g =
                    attention_flash_backward(q, k, v, fwd_out, lse, mask, opt, dout, c.threads, "auto", &st);
                w.scratch_bytes = static_cast<double>(st.scratch_bytes);
                return std::move(g.dq);
            }
            return attention_backward(c.backend, q, k, v, mask, opt, dout, nullptr, c.threads).dq;
        };
        w.base_rss = proc_status_bytes("VmRSS");
        const int total = c.warmup + c.reps;
        Tensor out;
        double seconds_so_far = 0;
        for (int r = 0; r < total; ++r) {
            if (c.progress) {
                BenchRunStatus s;
                s.run = r + 1;
                s.total = total;
                s.warmup = r < c.warmup;
                if (r > 0) s.seconds_left = seconds_so_far / r * (total - r);
                c.progress(c, s);
            }
            out = Tensor();  // the previous output is freed before the next run
            const double c0 = process_cpu_seconds();
            const auto t0 = std::chrono::steady_clock::now();
            out = run();
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            seconds_so_far += s;
            if (r >= c.warmup && w.ntimes < kBenchMaxReps) {
                w.cpu[w.ntimes] = process_cpu_seconds() - c0;
                w.times[w.ntimes++] = s;
            }
        }
        w.peak_rss = proc_status_bytes("VmHWM");
        if (backend_info(c.backend).precision != Precision::F32 && !c.backward) {
            const Tensor ref = attention(Backend::Flash, q, k, v, mask, opt, nullptr, c.threads);
            double emax = 0, rmax = 0;
            for (int64_t n = 0; n < ref.numel(); ++n) {
                emax = std::max(emax, static_cast<double>(std::fabs(out.data[n] - ref.data[n])));
                rmax = std::max(rmax, static_cast<double>(std::fabs(ref.data[n])));
            }
            w.err_vs_fp32 = rmax > 0 ? emax / rmax : emax;
        }
        w.ok = 1;
    } catch (const std::exception& e) {
        std::snprintf(w.error, sizeof w.error, "%s", e.what());
    }
    if (c.progress) {
        BenchRunStatus s;
        s.done = true;
        c.progress(c, s);
    }
    const char* p = reinterpret_cast<const char*>(&w);
    size_t left = sizeof w;
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n <= 0) break;
        p += n, left -= static_cast<size_t>(n);
    }
    ::close(fd);
    std::fflush(nullptr);
    ::_exit(0);
}

}  // namespace

// A GPU case: random Q, K, V uploaded once, kernels timed with cudaEvents
// (attn/cuda/cuda.hpp); transfers are not counted, unlike the CPU rows' wall time.
BenchResult run_cuda_case(const BenchCase& c) {
    BenchResult r;
    Tensor q, k, v;
    random_qkv(c, q, k, v);
    const Mask mask = c.mask();
    try {
        const CudaBenchResult g = bench_attention_cuda(q, k, v, mask, AttentionOptions{},
                                                       backend_info(c.backend).cuda_kernel, c.reps, c.warmup);
        r.ok = true;
        r.seconds = g.median_ms / 1e3;
        r.flops = bench_flops(c);
        r.gflops = r.seconds > 0 ? r.flops / r.seconds / 1e9 : 0;
        r.times.assign(static_cast<size_t>(g.reps), r.seconds);
        r.io_bytes = 16.0 * static_cast<double>(c.B) * c.H * static_cast<double>(c.T) * c.Dk;
        r.cpu_utilization = 1.0;
    } catch (const InputError& e) {
        r.error = e.what();
    }
    return r;
}

BenchResult run_case(const BenchCase& c) {
    if (c.B <= 0 || c.H <= 0 || c.T <= 0 || c.Dk <= 0 || c.reps <= 0 || c.warmup < 0)
        throw InputError("bench: sizes and repetitions must be positive");
    BenchResult res;
    if (c.backward && backend_info(c.backend).backward == nullptr) {
        res.error = std::string(backend_name(c.backend)) + " has no backward pass";
        return res;
    }
    if (std::string why; !backend_available(c.backend, &why)) {
        res.error = why;
        return res;
    }
    if (backend_info(c.backend).device == Device::Cuda) return run_cuda_case(c);
    res.flops = bench_flops(c);
    // q, k, v, out; backward: q, k, v, O, dO and dq, dk, dv
    res.io_bytes = (c.backward ? 8.0 : 4.0) * 4.0 * static_cast<double>(c.B) * c.H * c.T * c.Dk;
    int fds[2];
    if (::pipe(fds) != 0) {
        res.error = "pipe() failed";
        return res;
    }
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]), ::close(fds[1]);
        res.error = "fork() failed";
        return res;
    }
    if (pid == 0) {
        ::close(fds[0]);
        child_main(c, fds[1]);
    }
    ::close(fds[1]);
    Wire w{};
    char* p = reinterpret_cast<char*>(&w);
    size_t got = 0;
    while (got < sizeof w) {
        const ssize_t n = ::read(fds[0], p + got, sizeof w - got);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (got != sizeof w) {
        res.error = WIFSIGNALED(status) ? "the run was killed by signal " + std::to_string(WTERMSIG(status)) +
                                              (WTERMSIG(status) == 9 ? " (out of memory?)" : "")
                                        : "the run ended without a result";
        return res;
    }
    if (!w.ok) {
        res.error = w.error;
        return res;
    }
    res.ok = true;
    res.times.assign(w.times, w.times + w.ntimes);
    res.seconds = median(res.times);
    std::vector<double> util;
    const int t = resolve_threads(c.backend == Backend::Reference ? 1 : c.threads);
    for (int i = 0; i < w.ntimes; ++i) util.push_back(w.cpu[i] / (w.times[i] * t));
    res.cpu_utilization = median(util);
    res.cpu_seconds = median(std::vector<double>(w.cpu, w.cpu + w.ntimes));
    res.gflops = res.seconds > 0 ? res.flops / res.seconds / 1e9 : 0;
    res.peak_rss_bytes = w.peak_rss;
    res.base_rss_bytes = w.base_rss;
    res.err_vs_fp32 = w.err_vs_fp32;
    res.scratch_bytes = w.scratch_bytes;
    return res;
}

}  // namespace attn
