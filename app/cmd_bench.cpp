// `attn bench`: how fast is attention here, against what this machine can do?
// For each sequence length and implementation: the median time of --reps runs
// after --warmup runs, GFLOP/s (attention_flops: 4 B H T^2 Dk, about half with
// --causal), the fraction of the machine's FMA peak and of Eigen's GEMM (both
// measured in the same run), and the peak memory of the run (measured in a child
// process; attn/bench/bench.hpp). --backward times the backward pass instead
// (FLOPs: 2.5 x the forward's, FlashAttention's convention) and reports the tiled
// kernel's scratch.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/bench/bench.hpp"
#include "attn/core/cost.hpp"
#include "attn/core/errors.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "command.hpp"
#include "impl_option.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "progress.hpp"

namespace attn::cli {
namespace {

struct BenchOpts {
    BenchCase base;  // --batch, --heads, --d-k, --causal, --threads, --reps, --warmup, --seed
    std::string seq = "1024,4096", impl = "reference,flash,flash-bf16";
    bool yes = false;
    JsonOut json;
};

// Limits on what one `attn bench` may ask for: the caps of --reps and --warmup,
// threads per hardware thread, and the FLOPs of all timed and warm-up runs
// together above which the run needs --yes (the default run is about 7e11;
// 1e13 is tens of minutes of the reference implementation on one core).
constexpr int kMaxReps = kBenchMaxReps, kMaxWarmup = 100, kThreadsPerHardwareThread = 4;
constexpr double kFlopBudget = 1e13;

int hardware_threads() { return resolve_threads(0); }

// Refuses, before anything is measured, a run whose tensors would not fit in memory
// (naming the largest size) or whose work is above the budget without --yes.
void check_bench_budget(const BenchOpts& o, const BenchCase& base, const std::vector<int64_t>& seqs,
                        const std::vector<Backend>& impls) {
    const double B = static_cast<double>(base.B), H = static_cast<double>(base.H), Dk = static_cast<double>(base.Dk);
    double flops = 0, exps = 0;
    for (int64_t T : seqs) {
        // Q, K, V and the output must fit, whatever the implementation: blame the largest size
        const double io = 16.0 * B * H * static_cast<double>(T) * Dk;
        const auto [largest, opt] =
            std::max({std::pair{T, "--seq"}, {base.B, "--batch"}, {base.H, "--heads"}, {base.Dk, "--d-k"}});
        require_fits_in_memory(opt, io, fmt::format("Q, K, V and the output at B={}, H={}, T={}, Dk={}", base.B,
                                                     base.H, T, base.Dk));
        // the printed FLOP count (the library's bench_flops), for every run of every implementation
        BenchCase c = base;
        c.T = T;
        const double t = static_cast<double>(T), pairs = base.causal ? t * (t + 1) / 2 : t * t;
        const double runs = static_cast<double>(impls.size()) * (base.reps + base.warmup);
        flops += bench_flops(c) * runs;
        // one exponential a pair, twice with --backward (the forward, and the backward's recomputed weights):
        // at a small Dk they, not the FLOPs, are the time
        exps += B * H * pairs * runs * (base.backward ? 2.0 : 1.0);
    }
    require_json_writable(o.json);
    if (flops + kFlopsPerExp * exps > kFlopBudget && !o.yes)
        throw InputError(
            fmt::format("--seq: the runs would take about {:.1e} FLOPs and {:.1e} exponentials (counted as "
                        "{:g} FLOPs each), above the budget of {:.0e} (see --help); lower --seq, --batch, "
                        "--heads, --d-k or --reps, or add --yes",
                        flops, exps, kFlopsPerExp, kFlopBudget));
}

struct BenchRow {
    Backend impl;
    int64_t T;
    BenchResult r;
};

// Every (T, implementation) case measured, each in its own child process; a case that cannot
// run here (no backward, too large for the reference, no such hardware) or that fails is a
// note and an entry of `skipped`.
std::vector<BenchRow> measure_rows(const BenchCase& base, const std::vector<int64_t>& seqs,
                                   const std::vector<Backend>& impls, std::vector<std::string>& notes,
                                   nlohmann::json& skipped) {
    std::vector<BenchRow> rows;
    const double mem = physical_memory_bytes();
    for (int64_t T : seqs)
        for (const Backend impl : impls) {
            const char* name = backend_name(impl);
            BenchCase c = base;
            c.backend = impl;
            c.T = T;
            std::string skip;
            if (base.backward && backend_info(impl).backward == nullptr) {
                skip = fmt::format("it has no backward pass (backends with one: {})", backward_backend_names());
            } else if (impl == Backend::Reference) {
                // The reference holds one (T, T) float32 score matrix per (b, h) it works on; its
                // backward keeps the forward's five (B, H, T, T) steps and two (T, T) gradients.
                const double tt = static_cast<double>(T) * T;
                const double need = (base.backward ? (5.0 * c.B * c.H + 2.0) * 4.0 * tt : 4.0 * tt) +
                                    16.0 * c.B * c.H * static_cast<double>(T) * c.Dk;
                if (mem > 0 && need > 0.5 * mem)
                    skip =
                        fmt::format("{} needs {} (more than half of the {} of memory)",
                                    base.backward ? "its backward's (B, H, T, T) tensors" : "its (T, T) score matrix",
                                    format_bytes(need), format_bytes(mem));
            }
            if (skip.empty()) backend_available(impl, &skip);
            if (!skip.empty()) {
                notes.push_back(fmt::format("{} T={} skipped: {}", name, T, skip));
                skipped.push_back({{"impl", name}, {"seq", T}, {"reason", skip}});
                continue;
            }
            BenchResult r = run_case(c);
            if (!r.ok) {
                notes.push_back(fmt::format("{} T={} failed: {}", name, T, r.error));
                skipped.push_back({{"impl", name}, {"seq", T}, {"reason", r.error}});
                continue;
            }
            rows.push_back({impl, T, r});
        }

    return rows;
}

// The attn-bench document: the machine's yardsticks, the configuration, every row and skip.
nlohmann::json bench_json(const BenchCase& base, int threads, const FmaPeak& peak, double gemm,
                          const std::vector<BenchRow>& rows, std::map<int64_t, double>& ref_secs,
                          const nlohmann::json& skipped) {
    nlohmann::json results = nlohmann::json::array();
    for (const auto& row : rows) {
        const auto& r = row.r;
        nlohmann::json j = {{"impl", backend_name(row.impl)},
                            {"seq", row.T},
                            {"batch", base.B},
                            {"heads", base.H},
                            {"d_k", base.Dk},
                            {"causal", base.causal},
                            {"seconds", r.seconds},
                            {"times", r.times},
                            {"flops", r.flops},
                            {"gflops", r.gflops},
                            {"fraction_of_fma_peak", r.gflops / peak.gflops},
                            {"ratio_to_gemm", r.gflops / gemm},
                            {"peak_rss_bytes", r.peak_rss_bytes},
                            {"base_rss_bytes", r.base_rss_bytes},
                            {"io_bytes", r.io_bytes},
                            {"peak_rss_over_io", r.peak_rss_bytes / r.io_bytes},
                            {"cpu_utilization", r.cpu_utilization},
                            {"cpu_seconds", r.cpu_seconds},
                            {"fraction_of_fma_peak_cpu", r.flops / r.cpu_seconds / 1e9 / peak.gflops_per_cpu},
                            {"fraction_of_tile_peak_cpu", r.flops / r.cpu_seconds / 1e9 / peak.tile_gflops_per_cpu}};
        if (ref_secs.count(row.T) != 0 && row.impl != Backend::Reference)
            j["speedup_vs_reference"] = ref_secs[row.T] / r.seconds;
        if (r.err_vs_fp32 >= 0) j["err_vs_fp32"] = r.err_vs_fp32;
        if (r.scratch_bytes >= 0) j["scratch_bytes"] = r.scratch_bytes;
        results.push_back(j);
    }
    const std::vector<std::string> kernels = flash_kernels();
    const CpuInfo cpu = cpu_info();
    nlohmann::json doc = {{"format", "attn-bench"},
                          {"version", 1},
                          {"machine",
                           {{"threads", threads},
                            {"fma_peak_gflops", peak.gflops},
                            {"fma_gflops_per_cpu_second", peak.gflops_per_cpu},
                            {"fma_isa", peak.isa},
                            {"tile_peak_gflops", peak.tile_gflops},
                            {"tile_gflops_per_cpu_second", peak.tile_gflops_per_cpu},
                            {"tile_shape", peak.tile_shape},
                            {"gemm_gflops", gemm},
                            {"flash_kernel", kernels.front()},
                            {"bf16", flash_bf16_supported()},
                            {"flash_bf16_path", flash_bf16_path()},
                            {"cpu_model", cpu.model},
                            {"cpu_flags", cpu.flags}}},
                          {"config",
                           {{"batch", base.B},
                            {"heads", base.H},
                            {"d_k", base.Dk},
                            {"causal", base.causal},
                            {"backward", base.backward},
                            {"flop_factor", base.backward ? kBackwardFlopFactor : 1.0},
                            {"reps", base.reps},
                            {"warmup", base.warmup}}},
                          {"results", results},
                          {"skipped", skipped}};
    return doc;
}

// The table on the terminal, then the precision, scratch and skip notes and the legend.
void print_bench(const BenchCase& base, int threads, const FmaPeak& peak, double gemm,
                 const std::vector<BenchRow>& rows, std::map<int64_t, double>& ref_secs,
                 const std::vector<std::string>& notes) {
    fmt::print("machine: {}; {} threads; FMA peak {:.1f} GFLOP/s ({} register loop); Eigen sgemm {:.1f} GFLOP/s; "
               "flash kernel {}, flash-bf16 path {}\n",
               cpu_info().model, threads, peak.gflops, peak.isa, gemm, flash_kernels().front(), flash_bf16_path());
    fmt::print("{}B={} H={} Dk={} {}; median of {} runs after {} warm-up; FLOPs = {}{}\n",
               base.backward ? "backward pass: " : "", base.B, base.H, base.Dk, base.causal ? "causal" : "no mask",
               base.reps, base.warmup, base.backward ? "2.5 x " : "", base.causal ? "2 B H T(T+1) Dk" : "4 B H T^2 Dk");
    if (base.backward)
        fmt::print("  (2.5 x the forward's FLOPs: FlashAttention's convention for the backward, 5 products against 2;\n"
                   "   flash times the tiled backward from saved O and L; reference recomputes its forward inside)\n");
    fmt::print("{:<11}{:>7}{:>11}{:>10}{:>8}{:>8}{:>8}{:>11}{:>8}{:>6}{:>9}\n", "impl", "T", "seconds", "GFLOP/s",
               "%FMA", "xGEMM", "xref", "peak RSS", "RSS/io", "CPU", "%FMAcpu");
    for (const auto& row : rows) {
        const auto& r = row.r;
        const std::string xref = ref_secs.count(row.T) != 0 && row.impl != Backend::Reference
                                     ? fmt::format("{:.1f}", ref_secs[row.T] / r.seconds)
                                     : "-";
        fmt::print("{:<11}{:>7}{:>11.4f}{:>10.1f}{:>7.1f}%{:>8.2f}{:>8}{:>11}{:>8.2f}{:>5.0f}%{:>8.1f}%\n",
                   backend_name(row.impl), row.T,
                   r.seconds, r.gflops, 100.0 * r.gflops / peak.gflops, r.gflops / gemm, xref,
                   format_bytes(r.peak_rss_bytes), r.peak_rss_bytes / r.io_bytes, 100.0 * r.cpu_utilization,
                   100.0 * r.flops / r.cpu_seconds / 1e9 / peak.gflops_per_cpu);
    }
    for (const auto& row : rows)
        if (row.r.err_vs_fp32 >= 0)
            fmt::print("{} T={}: max |{} - fp32| / max |fp32| = {:.2e}\n", backend_name(row.impl), row.T,
                       precision_name(backend_info(row.impl).precision), row.r.err_vs_fp32);
    for (const auto& row : rows)
        if (row.r.scratch_bytes >= 0)
            fmt::print("{} T={}: backward scratch {} ({:.2f} x the bytes of Q, K, V, O, dO and the gradients)\n",
                       backend_name(row.impl), row.T, format_bytes(row.r.scratch_bytes),
                       row.r.scratch_bytes / row.r.io_bytes);
    for (const auto& n : notes) fmt::print("note: {}\n", n);
    fmt::print(
        "peak RSS: VmHWM of a child process that holds Q, K, V (and the output); RSS/io = that / bytes of Q, K, V, "
        "out{}\n"
        "CPU: CPU time / (wall time x threads); below 100% the cores were shared with other work (reference: 1 "
        "thread)\n"
        "%FMAcpu: GFLOP per CPU-second / the FMA loop's GFLOP per CPU-second ({:.1f}): efficiency while running\n"
        "tile: a {} register tile fed from L1 (the kernels' inner loop alone) runs at {:.1f} GFLOP per CPU-second\n"
        "here, {:.0f}% of the FMA loop's rate: what a kernel of that shape reaches before its softmax and memory\n",
        base.backward ? " (backward: and dO, O, dQ, dK, dV)" : "", peak.gflops_per_cpu, peak.tile_shape,
        peak.tile_gflops_per_cpu, 100.0 * peak.tile_gflops_per_cpu / peak.gflops_per_cpu);
}

// One case's run line on stderr, redrawn in place; erased when the case is done.
void draw_bench_run(const BenchCase& c, const BenchRunStatus& s) {
    std::fprintf(stderr, "\r\033[K");
    if (s.done) return;
    std::fprintf(stderr, "  %s T=%lld: run %d/%d%s", backend_name(c.backend), static_cast<long long>(c.T), s.run,
                 s.total, s.warmup ? " (warm-up)" : "");
    if (s.seconds_left >= 0) std::fprintf(stderr, ", about %.0f s left", s.seconds_left);
}

int run_bench(const BenchOpts& o) {
    // ---- validate everything before measuring anything (CLI11 checked the single numbers)
    BenchCase base = o.base;
    const int hw = hardware_threads();
    if (base.threads > kThreadsPerHardwareThread * hw)
        throw InputError(fmt::format("--threads: must be at most {} ({} x the {} hardware threads), got {}",
                                     kThreadsPerHardwareThread * hw, kThreadsPerHardwareThread, hw, base.threads));
    const std::vector<int64_t> seqs = parse_int_list("--seq", o.seq);
    const std::vector<Backend> impls = backends_of(o.impl);  // names checked by backend_validator() while parsing
    check_bench_budget(o, base, seqs, impls);
    const int threads = resolve_threads(base.threads);
    base.threads = threads;
    if (cli::stderr_is_tty()) base.progress = draw_bench_run;  // called from the library's forked child

    // ---- the machine's own yardsticks, measured now on the same threads
    cli::ProgressLine line;
    line.show("measuring the FMA peak and Eigen GEMM");
    const FmaPeak peak = measure_fma_peak(threads);
    const double gemm = measure_gemm(threads);
    line.clear();

    std::vector<std::string> notes;
    nlohmann::json skipped = nlohmann::json::array();
    const std::vector<BenchRow> rows = measure_rows(base, seqs, impls, notes, skipped);

    // speed-up over the reference at the same T, where it ran
    std::map<int64_t, double> ref_secs;
    for (const auto& row : rows)
        if (row.impl == Backend::Reference) ref_secs[row.T] = row.r.seconds;

    if (o.json.given()) {
        write_json(o.json, bench_json(base, threads, peak, gemm, rows, ref_secs, skipped), "attn-bench", 1);
        if (o.json.to_stdout()) return 0;
    }
    print_bench(base, threads, peak, gemm, rows, ref_secs, notes);
    return 0;
}

attn::cli::Command bench_cmd{
    "bench", "Time attention implementations against this machine's FMA peak and Eigen GEMM", 80,
    [](CLI::App& sub) -> Runner {
        auto o = std::make_shared<BenchOpts>();
        BenchCase& c = o->base;
        sub.add_option("--batch,-B", c.B, "batch size B")->type_name("B")->capture_default_str()->check(integer_in(1));
        sub.add_option("--heads,-H", c.H, "heads H")->type_name("H")->capture_default_str()->check(integer_in(1));
        sub.add_option("--seq,-T", o->seq, "sequence lengths T, comma-separated")
            ->type_name("LIST")
            ->capture_default_str();
        sub.add_option("--d-k", c.Dk, "head dimension Dk (= Dv)")
            ->type_name("Dk")
            ->capture_default_str()
            ->check(integer_in(1));
        sub.add_flag("--causal", c.causal, "causal mask (FLOPs count the allowed pairs only: about half)");
        sub.add_option("--impl", o->impl, backend_help("comma-separated; one that cannot run here is skipped"))
            ->check(backend_validator(/*list=*/true))
            ->type_name("LIST")
            ->capture_default_str();
        sub.add_option("--threads", c.threads,
                       fmt::format("threads (0: all {} hardware threads; at most {} x that)", hardware_threads(),
                                   kThreadsPerHardwareThread))
            ->type_name("N")
            ->capture_default_str()
            ->check(integer_in(0));
        sub.add_option("--reps", c.reps,
                       fmt::format("timed runs per case (the median is reported), at most {}", kMaxReps))
            ->type_name("N")
            ->capture_default_str()
            ->check(integer_in(1, kMaxReps));
        sub.add_option("--warmup", c.warmup, fmt::format("untimed runs before them, at most {}", kMaxWarmup))
            ->type_name("N")
            ->capture_default_str()
            ->check(integer_in(0, kMaxWarmup));
        c.seed = 0;  // the one default of every command (docs/cli.md)
        sub.add_option("--seed", c.seed, "seed of the random Q, K, V")
            ->type_name("S")
            ->capture_default_str()
            ->check(seed_validator());
        sub.add_flag("--backward", c.backward,
                     "time the backward pass (dQ, dK, dV for a random dO) instead; its FLOPs are counted as 2.5 x "
                     "the forward's (FlashAttention's convention); flash's row also reports its scratch memory");
        add_json(sub, o->json, "attn-bench");
        sub.add_flag("--yes", o->yes, fmt::format("run even when all runs together exceed {:.0e} FLOPs", kFlopBudget));
        sub.footer(
            fmt::format("Budget: a bench whose runs (every --seq x --impl, --warmup + --reps each) add up to more "
                        "than {:.0e} FLOPs\nis refused unless --yes is given.",
                        kFlopBudget));
        return [o] { return run_bench(*o); };
    }};

}  // namespace
}  // namespace attn::cli
