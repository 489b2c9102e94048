// attn/bench/train_bench.hpp: the timing of one training step (forward + backward + AdamW) of the
// tiny Transformer, in-process (the tests time the fast step against the reference ops with it;
// scripts/bench_train_torch.py times whole `attn train` runs instead).
#pragma once

#include <cstdint>

#include "attn/nn/trainable_stack.hpp"

namespace attn {

struct TrainBench {
    int64_t steps = 0;
    double seconds = 0;        // wall time of the timed steps
    double steps_per_s = 0;
    double ms_per_step = 0;
    double gflops = 0;         // train_step_flops / time per step, in GFLOP/s
    double final_loss = 0;
};

// Random tokens and targets (seeded), warmup steps untimed, then `steps` timed
// forward_backward + AdamW steps on `threads` threads.
TrainBench bench_train_step(const ModelConfig& cfg, int64_t B, int64_t T, int64_t steps, int threads,
                            uint64_t seed = 1, int64_t warmup = 3);

}  // namespace attn
