// attn/experiments/positions.hpp: the positional-information part of experiment
// "distance" (C4), also run live by lesson 17.
//
// An encoder (bidirectional) Transformer learns an order-dependent task, reverse
// (x1..xn SEP [MASK] x n -> xn..x1 at the [MASK] positions, attn/train/tasks.hpp), with no
// positional information, learned positions or sinusoidal ones. Without positions
// attention is permutation-equivariant: every [MASK] position sees the same multiset of
// tokens and gets the same output, so at most one symbol per row can be right.
// Also measured on an untrained no-position model: permuting a row's tokens permutes the
// output rows the same way (largest difference).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/experiments/experiment.hpp"
#include "attn/nn/trainable_stack.hpp"

namespace attn {

struct PositionsRun {
    PosKind pos = PosKind::None;
    std::vector<double> final_acc;   // per seed, held-out accuracy at the [MASK] positions
    std::vector<double> curve_step;  // eval steps
    std::vector<double> curve_acc;   // mean held-out accuracy over seeds
};

struct PositionsResult {
    int64_t seq = 0, symbols = 0, steps = 0;
    double chance = 0;                  // 1 / symbols
    // The best any permutation-equivariant model can do on the held-out rows: one answer
    // for every [MASK] of a row, so (count of the row's most frequent symbol) / n, averaged.
    double equivariant_ceiling = 0;
    double equivariance_max_diff = 0;   // |logits(perm x) - perm(logits(x))|, no positions
    double equivariance_with_pos = 0;   // the same with learned positions (not equivariant)
    std::vector<PositionsRun> runs;     // none, learned, sinusoidal
};

// Quick: a few seconds (lesson 17, tests); Default / Full: more steps and seeds.
PositionsResult run_positions(ExperimentSize size, int seeds, uint64_t seed, int threads,
                              const ExperimentProgress& progress = {});

}  // namespace attn
