// attn_cuda_bench: times the CUDA kernels on one grid of sizes and checks each
// against the readable GPU path on the same input (the CPU reference is too slow
// at these sizes; tests/test_cuda.cpp checks every kernel against it on small ones).
//
//   attn_cuda_bench [--b 4] [--h 16] [--t 4096] [--dk 64,128] [--causal]
//                   [--impl cuda-naive,cuda-naive-tiled,cuda-flash,cuda-flash-f16,cuda-flash-bf16]
//                   [--reps 10] [--warmup 2] [--seed 0]
//
// Prints one JSON object per (impl, Dk) on stdout (scripts/gpu-check.sh reads them).
// Exit 2 with one line on stderr for bad options or no GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "attn/cuda.hpp"
#include "attn/errors.hpp"
#include "attn/rng.hpp"

namespace attn::cuda_detail {
void force_tiled_gemm(bool on);  // cuda_internal.hpp: the readable path without cuBLAS
}

namespace {

std::vector<std::string> split(std::string_view s) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos <= s.size()) {
        const size_t c = s.find(',', pos);
        out.emplace_back(s.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
        if (c == std::string_view::npos) break;
        pos = c + 1;
    }
    return out;
}

int64_t integer(std::string_view opt, const std::string& v, int64_t lo) {
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < lo)
        throw attn::InputError(fmt::format("{}: must be an integer >= {}, got '{}'", opt, lo, v));
    return x;
}
int64_t positive(std::string_view opt, const std::string& v) { return integer(opt, v, 1); }

// Unit-variance inputs from a counter hash: fast, and the same on every machine.
attn::Tensor random_tensor(attn::Shape s, uint64_t seed) {
    attn::Tensor t(std::move(s));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.data[static_cast<size_t>(i)] = (attn::counter_uniform(seed, static_cast<uint64_t>(i)) - 0.5f) * 3.4641016f;
    return t;
}

int run(int argc, char** argv) {
    int64_t B = 4, H = 16, T = 4096, reps = 10, warmup = 2, seed = 0;
    std::vector<int64_t> dks{64, 128};
    // "cuda-naive-tiled": the readable path on the plain tiled GEMM instead of cuBLAS
    std::vector<std::string> impls{"cuda-naive", "cuda-flash", "cuda-flash-f16", "cuda-flash-bf16"};
    bool causal = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view opt = argv[i];
        if (opt == "--causal") {
            causal = true;
            continue;
        }
        if (opt == "--help" || opt == "-h") {
            std::puts("attn_cuda_bench [--b 4] [--h 16] [--t 4096] [--dk 64,128] [--causal] "
                      "[--impl cuda-naive,cuda-naive-tiled,cuda-flash,cuda-flash-f16,cuda-flash-bf16] [--reps 10] [--warmup 2] "
                      "[--seed 0]");
            return 0;
        }
        static const std::string_view known[] = {"--b", "--h", "--t", "--reps", "--warmup", "--seed", "--dk", "--impl"};
        if (std::find(std::begin(known), std::end(known), opt) == std::end(known))
            throw attn::InputError(fmt::format("unknown option '{}' (see --help)", opt));
        if (i + 1 >= argc) throw attn::InputError(fmt::format("{}: needs a value", opt));
        const std::string val = argv[++i];
        if (opt == "--b") B = positive(opt, val);
        else if (opt == "--h") H = positive(opt, val);
        else if (opt == "--t") T = positive(opt, val);
        else if (opt == "--reps") reps = positive(opt, val);
        else if (opt == "--warmup") warmup = integer(opt, val, 0);
        else if (opt == "--seed") seed = integer(opt, val, 0);
        else if (opt == "--dk") {
            dks.clear();
            for (const auto& d : split(val)) dks.push_back(positive(opt, d));
        } else if (opt == "--impl") {
            impls.clear();
            for (const auto& k : split(val)) {
                if (k != "cuda-naive-tiled") (void)attn::parse_cuda_kernel(k, "--impl");  // checks the name
                impls.push_back(k);
            }
        }
    }
    attn::require_cuda();
    const std::string device = attn::cuda_device_name();
    const attn::Mask mask = causal ? attn::Mask::make_causal() : attn::Mask::none();
    const attn::AttentionOptions opt{};
    for (const int64_t dk : dks) {
        const attn::Tensor q = random_tensor({B, H, T, dk}, static_cast<uint64_t>(seed) * 3 + 1);
        const attn::Tensor k = random_tensor({B, H, T, dk}, static_cast<uint64_t>(seed) * 3 + 2);
        const attn::Tensor v = random_tensor({B, H, T, dk}, static_cast<uint64_t>(seed) * 3 + 3);
        // the readable GPU path's output is the yardstick at these sizes
        const attn::Tensor ref = attn::attention_cuda(q, k, v, mask, opt, attn::CudaKernel::Naive);
        for (const std::string& impl : impls) {
            const bool tiled = impl == "cuda-naive-tiled";
            const attn::CudaKernel kern = tiled ? attn::CudaKernel::Naive : attn::parse_cuda_kernel(impl);
            attn::cuda_detail::force_tiled_gemm(tiled);
            const attn::Tensor out = attn::attention_cuda(q, k, v, mask, opt, kern);
            const double diff = attn::max_abs_diff(out, ref);
            attn::CudaBenchResult r =
                attn::bench_attention_cuda(q, k, v, mask, opt, kern, static_cast<int>(reps), static_cast<int>(warmup));
            attn::cuda_detail::force_tiled_gemm(false);
            r.kernel = impl;
            std::printf("%s\n",
                        fmt::format("{{\"impl\": \"{}\", \"device\": \"{}\", \"B\": {}, \"H\": {}, \"T\": {}, \"Dk\": {}, "
                                    "\"causal\": {}, \"reps\": {}, \"mean_ms\": {:.4f}, \"min_ms\": {:.4f}, "
                                    "\"tflops\": {:.2f}, \"max_abs_diff_vs_naive\": {:.3g}}}",
                                    r.kernel, device, B, H, T, dk, causal ? "true" : "false", r.reps, r.mean_ms,
                                    r.min_ms, r.tflops, diff)
                            .c_str());
            std::fflush(stdout);
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const attn::InputError& e) {
        std::fprintf(stderr, "attn_cuda_bench: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attn_cuda_bench: internal error: %s\n", e.what());
        return 1;
    }
}
