// The timing path of one training step (attn/bench/train_bench.hpp).
#include "attn/bench/train_bench.hpp"

#include <chrono>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/train/optim.hpp"

namespace attn {

TrainBench bench_train_step(const ModelConfig& cfg, int64_t B, int64_t T, int64_t steps, int threads, uint64_t seed,
                            int64_t warmup) {
    TrainableStack model(cfg);
    model.init(seed);
    const ModelConfig& c = model.config();
    Rng rng(seed, 99);
    std::vector<int32_t> tokens(static_cast<size_t>(B * T)), targets(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(c.vocab));
        targets[i] = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(c.vocab));
    }
    AdamW opt;
    auto params = model.params();
    TrainBench r;
    auto one = [&](int64_t s) {
        const StepStats st = model.forward_backward(tokens.data(), targets.data(), B, T, seed + uint64_t(s), threads);
        opt.step(params);
        r.final_loss = st.loss;
    };
    for (int64_t s = 0; s < warmup; ++s) one(s);
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < steps; ++s) one(warmup + s);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.steps = steps;
    r.steps_per_s = r.seconds > 0 ? static_cast<double>(steps) / r.seconds : 0;
    r.ms_per_step = steps > 0 ? 1e3 * r.seconds / static_cast<double>(steps) : 0;
    r.gflops = r.seconds > 0 ? train_step_flops(c, B, T) * static_cast<double>(steps) / r.seconds / 1e9 : 0;
    return r;
}

}  // namespace attn
