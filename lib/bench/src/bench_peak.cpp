// lib/bench/src/bench_peak.cpp: the machine's float32 FMA peak, measured by a
// register-only loop, and the rate of a register tile fed from L1 (see
// attn/bench/bench.hpp): lib/cpu's kernels (attn/cpu/peak.hpp) timed on every thread.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "attn/bench/bench.hpp"
#include "attn/core/parallel.hpp"
#include "attn/cpu/peak.hpp"

namespace attn {

namespace {
// Best of 3 runs of fn on every thread (about `seconds` each, calibrated on one thread):
// {GFLOP/s of wall time, GFLOP per CPU-second}. flops: per unit of fn's argument.
std::pair<double, double> time_loop(float (*fn)(int64_t), double flops, int threads, double seconds) {
    using clock = std::chrono::steady_clock;
    int64_t iters = 1 << 10;
    volatile float sink = 0;
    for (;;) {
        const auto t0 = clock::now();
        sink = sink + fn(iters);
        const double s = std::chrono::duration<double>(clock::now() - t0).count();
        if (s > seconds / 8 || iters > (int64_t(1) << 40)) {
            iters = static_cast<int64_t>(static_cast<double>(iters) * seconds / std::max(s, 1e-9));
            break;
        }
        iters *= 4;
    }
    const int t = resolve_threads(threads);
    double best = 0, best_cpu = 0;
    for (int rep = 0; rep < 3; ++rep) {  // best of 3: the machine is shared
        std::vector<float> sinks(static_cast<size_t>(t));
        const double c0 = process_cpu_seconds();
        const auto t0 = clock::now();
        parallel_for(t, t, [&](int64_t i, int) { sinks[static_cast<size_t>(i)] = fn(iters); });
        const double s = std::chrono::duration<double>(clock::now() - t0).count();
        const double c = process_cpu_seconds() - c0;
        for (float x : sinks) sink = sink + x;
        const double gflop = static_cast<double>(t) * static_cast<double>(iters) * flops / 1e9;
        best = std::max(best, gflop / s);
        best_cpu = std::max(best_cpu, gflop / c);
    }
    return {best, best_cpu};
}
}  // namespace

FmaPeak measure_fma_peak(int threads, double seconds) {
    const PeakKernels k = peak_kernels();
    FmaPeak peak;
    peak.isa = k.isa;
    peak.tile_shape = k.tile_shape;
    std::tie(peak.gflops, peak.gflops_per_cpu) = time_loop(k.fma, 12.0 * k.lanes * 2.0, threads, seconds);
    std::tie(peak.tile_gflops, peak.tile_gflops_per_cpu) =
        time_loop(k.tile, 2.0 * kPeakTileSteps * kPeakTileRows * k.tile_nv * k.lanes, threads, seconds);
    return peak;
}

}  // namespace attn
