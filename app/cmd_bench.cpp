// `attn bench`: how fast is attention here, against what this machine can do?
// For each sequence length and implementation: the median time of --reps runs
// after --warmup runs, GFLOP/s (attention_flops: 4 B H T^2 Dk, about half with
// --causal), the fraction of the machine's FMA peak and of Eigen's GEMM (both
// measured in the same run), and the peak memory of the run (measured in a child
// process; attn/experiments/bench.hpp).
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/experiments/bench.hpp"
#include "attn/core/cost.hpp"
#include "attn/cuda/cuda.hpp"
#include "attn/core/errors.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "command.hpp"
#include "options.hpp"

namespace attn::cli {
namespace {

// One GPU case: random Q, K, V uploaded once, kernels timed with cudaEvents
// (attn/cuda/cuda.hpp); transfers are not counted, unlike the CPU rows' wall time.
BenchResult run_cuda_case(const BenchCase& c) {
    BenchResult r;
    const Shape s{c.B, c.H, c.T, c.Dk};
    Tensor q(s), k(s), v(s);
    Rng rng(c.seed, 0);
    for (Tensor* t : {&q, &k, &v})
        for (auto& x : t->data) x = rng.normal();
    try {
        const CudaBenchResult g = bench_attention_cuda(q, k, v, c.mask(), AttentionOptions{},
                                                       parse_cuda_kernel(c.impl, "--impl"), c.reps, c.warmup);
        r.ok = true;
        r.seconds = g.median_ms / 1e3;
        r.flops = g.flops;
        r.gflops = r.seconds > 0 ? r.flops / r.seconds / 1e9 : 0;
        r.times.assign(static_cast<size_t>(g.reps), r.seconds);
        r.io_bytes = 16.0 * static_cast<double>(c.B) * c.H * static_cast<double>(c.T) * c.Dk;
        r.cpu_utilization = 1.0;
    } catch (const InputError& e) {
        r.error = e.what();
    }
    return r;
}


struct BenchOpts {
    std::string batch = "1", heads = "8", seq = "1024,4096", d_k = "64", impl = "reference,flash,flash-bf16";
    std::string threads = "0", reps = "5", warmup = "1", seed = "1";
    bool causal = false, json = false;
};

// One non-negative (or positive) integer option, worded like parse_int_list.
int64_t parse_int(std::string_view opt, const std::string& text, bool allow_zero) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < 0 || (v == 0 && !allow_zero))
        throw InputError(fmt::format("{}: must be a {} integer, got '{}'", opt, allow_zero ? "non-negative" : "positive",
                                     text));
    return v;
}

int run_bench(const BenchOpts& o) {
    // ---- validate everything before measuring anything
    BenchCase base;
    base.B = parse_int("--batch", o.batch, false);
    base.H = parse_int("--heads", o.heads, false);
    base.Dk = parse_int("--d-k", o.d_k, false);
    base.reps = static_cast<int>(std::min<int64_t>(parse_int("--reps", o.reps, false), 256));
    base.warmup = static_cast<int>(std::min<int64_t>(parse_int("--warmup", o.warmup, true), 100));
    base.threads = static_cast<int>(std::min<int64_t>(parse_int("--threads", o.threads, true), 4096));
    base.seed = static_cast<uint64_t>(parse_int("--seed", o.seed, true));
    base.causal = o.causal;
    const std::vector<int64_t> seqs = parse_int_list("--seq", o.seq);
    const std::vector<std::string> impls = parse_word_list("--impl", o.impl);
    for (const auto& name : impls) {
        if (name.rfind("cuda-", 0) == 0) {
            parse_cuda_kernel(name, "--impl");  // throws for an unknown GPU kernel
            continue;
        }
        const auto& ok = bench_impls();
        if (std::find(ok.begin(), ok.end(), name) == ok.end())
            throw InputError(fmt::format(
                "--impl: must be a list of reference, flash, flash-bf16, cuda-naive, cuda-flash, cuda-flash-f16, "
                "cuda-flash-bf16; got '{}'",
                name));
    }
    for (int64_t T : seqs) {
        // q, k, v and out must fit, whatever the implementation
        const double io = 16.0 * static_cast<double>(base.B) * base.H * static_cast<double>(T) * base.Dk;
        require_fits_in_memory("--seq", io, fmt::format("Q, K, V and the output at T={}", T));
    }
    const int threads = resolve_threads(base.threads);
    base.threads = threads;
    const bool progress = isatty(fileno(stderr)) != 0;
    base.progress = progress;

    // ---- the machine's own yardsticks, measured now on the same threads
    if (progress) fmt::print(stderr, "\r\033[K  measuring the FMA peak and Eigen GEMM...");
    const FmaPeak peak = measure_fma_peak(threads);
    const double gemm = measure_gemm(threads);
    if (progress) fmt::print(stderr, "\r\033[K");

    nlohmann::json results = nlohmann::json::array(), skipped = nlohmann::json::array();
    struct Row {
        std::string impl;
        int64_t T;
        BenchResult r;
    };
    std::vector<Row> rows;
    std::vector<std::string> notes;
    const double mem = physical_memory_bytes();
    for (int64_t T : seqs)
        for (const auto& impl : impls) {
            BenchCase c = base;
            c.impl = impl;
            c.T = T;
            std::string skip;
            if (impl == "reference") {
                // The reference holds one (T, T) float32 score matrix per (b, h) it works on.
                const double need = 4.0 * static_cast<double>(T) * T + 16.0 * c.B * c.H * static_cast<double>(T) * c.Dk;
                if (mem > 0 && need > 0.5 * mem)
                    skip = fmt::format("its (T, T) score matrix needs {} (more than half of the {} of memory)",
                                       format_bytes(need), format_bytes(mem));
            }
            if (impl == "flash-bf16" && !flash_bf16_supported()) skip = "this CPU has no AVX-512 BF16";
            std::string why;
            const bool gpu = impl.rfind("cuda-", 0) == 0;
            if (gpu && !cuda_available(&why)) skip = why;
            if (!skip.empty()) {
                notes.push_back(fmt::format("{} T={} skipped: {}", impl, T, skip));
                skipped.push_back({{"impl", impl}, {"seq", T}, {"reason", skip}});
                continue;
            }
            BenchResult r = gpu ? run_cuda_case(c) : run_case(c);
            if (!r.ok) {
                notes.push_back(fmt::format("{} T={} failed: {}", impl, T, r.error));
                skipped.push_back({{"impl", impl}, {"seq", T}, {"reason", r.error}});
                continue;
            }
            rows.push_back({impl, T, r});
        }

    // speed-up over the reference at the same T, where it ran
    std::map<int64_t, double> ref_secs;
    for (const auto& row : rows)
        if (row.impl == "reference") ref_secs[row.T] = row.r.seconds;

    if (o.json) {
        for (const auto& row : rows) {
            const auto& r = row.r;
            nlohmann::json j = {{"impl", row.impl},
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
                                {"fraction_of_fma_peak_cpu", r.flops / r.cpu_seconds / 1e9 / peak.gflops_per_cpu}};
            if (ref_secs.count(row.T) != 0 && row.impl != "reference")
                j["speedup_vs_reference"] = ref_secs[row.T] / r.seconds;
            if (r.err_vs_fp32 >= 0) j["err_vs_fp32"] = r.err_vs_fp32;
            results.push_back(j);
        }
        const std::vector<std::string> kernels = flash_kernels();
        nlohmann::json doc = {{"format", "attn-bench"},
                              {"version", 1},
                              {"machine",
                               {{"threads", threads},
                                {"fma_peak_gflops", peak.gflops},
                                {"fma_gflops_per_cpu_second", peak.gflops_per_cpu},
                                {"fma_isa", peak.isa},
                                {"gemm_gflops", gemm},
                                {"flash_kernel", kernels.front()},
                                {"bf16", flash_bf16_supported()}}},
                              {"config",
                               {{"batch", base.B},
                                {"heads", base.H},
                                {"d_k", base.Dk},
                                {"causal", base.causal},
                                {"reps", base.reps},
                                {"warmup", base.warmup}}},
                              {"results", results},
                              {"skipped", skipped}};
        fmt::print("{}\n", doc.dump(2));
        return 0;
    }

    fmt::print("machine: {} threads; FMA peak {:.1f} GFLOP/s ({} register loop); Eigen sgemm {:.1f} GFLOP/s; "
               "flash kernel {}\n",
               threads, peak.gflops, peak.isa, gemm, flash_kernels().front());
    fmt::print("B={} H={} Dk={} {}; median of {} runs after {} warm-up; FLOPs = {}\n", base.B, base.H,
               base.Dk, base.causal ? "causal" : "no mask", base.reps, base.warmup,
               base.causal ? "2 B H T(T+1) Dk" : "4 B H T^2 Dk");
    fmt::print("{:<11}{:>7}{:>11}{:>10}{:>8}{:>8}{:>8}{:>11}{:>8}{:>6}{:>9}\n", "impl", "T", "seconds", "GFLOP/s", "%FMA",
               "xGEMM", "xref", "peak RSS", "RSS/io", "CPU", "%FMAcpu");
    for (const auto& row : rows) {
        const auto& r = row.r;
        const std::string xref =
            ref_secs.count(row.T) != 0 && row.impl != "reference" ? fmt::format("{:.1f}", ref_secs[row.T] / r.seconds) : "-";
        fmt::print("{:<11}{:>7}{:>11.4f}{:>10.1f}{:>7.1f}%{:>8.2f}{:>8}{:>11}{:>8.2f}{:>5.0f}%{:>8.1f}%\n", row.impl, row.T,
                   r.seconds, r.gflops, 100.0 * r.gflops / peak.gflops, r.gflops / gemm, xref,
                   format_bytes(r.peak_rss_bytes), r.peak_rss_bytes / r.io_bytes, 100.0 * r.cpu_utilization,
                   100.0 * r.flops / r.cpu_seconds / 1e9 / peak.gflops_per_cpu);
    }
    for (const auto& row : rows)
        if (row.r.err_vs_fp32 >= 0)
            fmt::print("flash-bf16 T={}: max |bf16 - fp32| / max |fp32| = {:.2e}\n", row.T, row.r.err_vs_fp32);
    for (const auto& n : notes) fmt::print("note: {}\n", n);
    fmt::print("peak RSS: VmHWM of a child process that holds Q, K, V (and the output); RSS/io = that / bytes of Q, K, V, out\n"
               "CPU: CPU time / (wall time x threads); below 100% the cores were shared with other work (reference: 1 thread)\n"
               "%FMAcpu: GFLOP per CPU-second / the FMA loop's GFLOP per CPU-second ({:.1f}): efficiency while running\n",
               peak.gflops_per_cpu);
    return 0;
}

attn::cli::Command reg{
    "bench", "Time attention implementations against this machine's FMA peak and Eigen GEMM", 80,
    [](CLI::App& sub) -> Runner {
        auto o = std::make_shared<BenchOpts>();
        sub.add_option("--batch", o->batch, "batch size B")->type_name("B")->capture_default_str();
        sub.add_option("--heads", o->heads, "heads H")->type_name("H")->capture_default_str();
        sub.add_option("--seq", o->seq, "sequence lengths T, comma-separated")->type_name("LIST")->capture_default_str();
        sub.add_option("--d-k", o->d_k, "head dimension Dk (= Dv)")->type_name("Dk")->capture_default_str();
        sub.add_flag("--causal", o->causal, "causal mask (FLOPs count the allowed pairs only: about half)");
        sub.add_option("--impl", o->impl, "implementations: reference, flash, flash-bf16 (and with a CUDA build and a GPU: cuda-naive, cuda-flash, cuda-flash-f16, cuda-flash-bf16)")->type_name("LIST")->capture_default_str();
        sub.add_option("--threads", o->threads, "threads (0: all hardware threads)")->type_name("N")->capture_default_str();
        sub.add_option("--reps", o->reps, "timed runs per case (the median is reported)")->type_name("N")->capture_default_str();
        sub.add_option("--warmup", o->warmup, "untimed runs before them")->type_name("N")->capture_default_str();
        sub.add_option("--seed", o->seed, "seed of the random Q, K, V")->type_name("S")->capture_default_str();
        sub.add_flag("--json", o->json, "print one attn-bench JSON document");
        return [o] { return run_bench(*o); };
    }};

}  // namespace
}  // namespace attn::cli
