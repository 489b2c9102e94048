// attn/bench/bench.hpp: what `attn bench` measures, as a library.
//
//   measure_fma_peak   the machine's float32 FMA throughput: every thread runs a
//                      register-only loop of independent FMAs (12 accumulators,
//                      enough to cover the FMA latency on every x86 core we know),
//                      widest vectors the CPU has. This is "100%". Then the same
//                      width's register tile fed from L1 (FmaPeak::tile_gflops).
//   measure_gemm       Eigen float32 GEMM throughput: each thread multiplies its
//                      own n x n matrices (Eigen is built without OpenMP, so one
//                      GEMM per thread is how all threads are kept busy).
//   run_case           one (backend, size). A CPU backend runs in a forked child
//                      process: it makes random Q, K, V, runs the backend warmup + reps
//                      times and reports every time and its peak memory (VmHWM of
//                      the child, whose only big allocations are Q, K, V and what the
//                      backend allocates). A child that dies (out of memory) is
//                      reported, not fatal. A GPU backend is timed with cudaEvents
//                      around the kernels alone (inputs uploaded once, before).
// FLOPs are attention_flops (attn/core/cost.hpp): 4 B H T^2 Dk (Q K^T and P V,
// a multiply-add = 2), and with a causal mask only the T(T+1)/2 allowed pairs.
// A backward case (BenchCase::backward) counts 2.5 times the forward's FLOPs,
// FlashAttention's convention (five T x T x D products against the forward's
// two), whatever an implementation really does (the tiled one recomputes S and
// P; the reference recomputes its whole forward first). What it times:
//   flash      attention_flash_backward from q, k, v, O, L and dO (the forward
//              that made O and L runs once before the timed runs)
//   reference  attention_backward_reference from q, k, v and dO
// plus, for flash, the kernel's scratch (FlashBackwardStats::scratch_bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/cpu/features.hpp"
#include "attn/core/mask.hpp"
#include "attn/nn/backend.hpp"

namespace attn {

struct FmaPeak {
    double gflops = 0;          // all threads, per second of wall time
    double gflops_per_cpu = 0;  // per second of CPU time of one thread: immune to time-sharing
    std::string isa;  // "avx512", "avx2", "scalar"
    // The same width's register tile fed from L1, the inner loop of the flash and GEMM kernels:
    // R rows x NV vectors of accumulators, each step loading NV vectors and broadcasting R
    // floats, 64 steps, then the R x NV stores (operands 17 KiB, all in L1). What a kernel of
    // that shape can reach on this CPU before any softmax or memory traffic; below the loop's
    // figure where the loads and broadcasts compete with the FMAs.
    double tile_gflops = 0, tile_gflops_per_cpu = 0;
    std::string tile_shape;  // "6 x 4 zmm", "6 x 2 ymm", "6 x 4 scalar"
};
// Runs about `seconds` per loop (the FMA loop, then the tile) on `threads` threads (0: all).
FmaPeak measure_fma_peak(int threads, double seconds = 0.3);

// cpu_info(): the processor's name and extensions, attn/cpu/features.hpp.
double measure_gemm(int threads, int64_t n = 512, double seconds = 0.3);

// The most timed runs one case can report (the child sends its times in a fixed-size message).
inline constexpr int kBenchMaxReps = 256;

struct BenchCase;
// Where a case's timing stands, for a progress line (the library draws none): before run `run`
// (1-based) of `total`, the first warm-up ones untimed, about seconds_left to go (< 0 before the
// first run is timed); done once after the last run.
struct BenchRunStatus {
    int run = 0, total = 0;
    bool warmup = false;
    double seconds_left = -1;
    bool done = false;
};
using BenchProgress = std::function<void(const BenchCase&, const BenchRunStatus&)>;

struct BenchCase {
    Backend backend = Backend::Flash;
    int64_t B = 1, H = 8, T = 1024, Dk = 64;
    bool causal = false;
    int threads = 0;
    int reps = 5, warmup = 1;
    uint64_t seed = 1;
    BenchProgress progress;  // empty: none; a CPU case calls it from its forked child
    bool backward = false;  // time the backward pass (dq, dk, dv for a random dO ~ N(0, 1))

    Mask mask() const { return causal ? Mask::make_causal() : Mask::none(); }
};

struct BenchResult {
    bool ok = false;
    std::string error;           // why not ok
    std::vector<double> times;   // seconds, one per rep
    double seconds = 0;          // median of times
    double gflops = 0;           // flops / seconds
    double flops = 0;
    double peak_rss_bytes = 0;   // VmHWM of the child at the end
    double base_rss_bytes = 0;   // VmRSS once Q, K, V existed, before the first run
    double io_bytes = 0;         // bytes of Q, K, V and the output
    double err_vs_fp32 = -1;
    // Median over runs of CPU time / (wall time x threads used): 1.0 when the
    // threads had their cores to themselves; lower when others shared them.
    double cpu_utilization = 0;
    double cpu_seconds = 0;  // median process CPU time (all threads) of a run
    double scratch_bytes = -1;  // backward flash only: the kernel's one scratch allocation
};

// FlashAttention's count of a backward pass: this many times the forward's FLOPs.
inline constexpr double kBackwardFlopFactor = 2.5;

// attention_flops of the case (Dv = Dk, its mask), times kBackwardFlopFactor for a backward case.
double bench_flops(const BenchCase& c);
// Throws InputError for sizes that are not positive; a backend that cannot run
// here (or, for a backward case, has no backward pass) is a result with
// ok = false and the reason in error.
BenchResult run_case(const BenchCase& c);

// Process CPU time so far, all threads (CLOCK_PROCESS_CPUTIME_ID).
double process_cpu_seconds();

}  // namespace attn
