// attn/train/induction.hpp: watching induction heads form in the tiny decoder that
// `attn train --task induction` trains (a 2-layer attention-only decoder, ModelConfig::mlp
// false, on random tokens repeated once: attn/train/tasks.hpp).
//
// Three scores per head, measured on a probe of rows r1..rn r1..rn (n = T/2, no filler; its
// own seed stream, never a training batch):
//   previous-token score   mean over queries i >= 1 of w[i][i-1]            (attn/core/head_scores.hpp)
//   prefix-matching score  mean over queries i in the second copy of w[i][i-n+1]: attention from
//                          r_k to the token after r_k's earlier occurrence   (idem)
//   copying score          the head's OV circuit read as a table of logits: for each symbol t,
//                          the logits the head adds when it attends to a position holding t,
//                            u_t = W_U diag(g_f) C W_O^h W_V^h diag(g_1) C E[t]
//                          (E: token embeddings, W_V^h, W_O^h: the head's slices of v_proj and
//                          o_proj, C: the LayerNorm's centring x - mean(x), g_1, g_f: the weights
//                          of the block's ln1 and of ln_f, W_U: the unembedding; the LayerNorms'
//                          division by the std, all biases and the position embeddings left
//                          out). The score is the share of symbols t whose own logit u_t[t] is
//                          the largest of u_t: 1 for a head that copies what it reads, about
//                          1/S (chance) for one that does not.
//
// Phase change (find_phase_change): the repeated-half loss of a model that does not read the
// context cannot beat ln S (the tokens are uniform), so ln S is the plateau. The phase change
// is the first evaluation where the eval loss is at or below the midpoint between ln S and
// the final loss, found only when the final loss is at most half of ln S. Its span: from the
// last evaluation before it with the loss still above 90% of the way down from the final loss
// to ln S (loss >= final + 0.9 (ln S - final)), to the first one at or below 10% of the way
// (loss <= final + 0.1 (ln S - final)).
//
// Ablation: zeroing a head's output is zeroing its columns of o_proj.weight (the head's
// slice of the concatenated heads): the model then sees the o_proj bias alone from it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "attn/nn/trainable_stack.hpp"
#include "attn/train/tasks.hpp"
#include "attn/train/trainer.hpp"

namespace attn {

using PerHead = std::vector<std::vector<double>>;  // [layer][head]

struct InductionScores {
    int64_t step = 0;      // training steps done when measured
    double loss = 0;       // the eval repeated-half loss at that point (nats)
    double seconds = 0;    // training time so far (evaluations excluded)
    PerHead prev, prefix, copy;
};

// The probe: rows r1..rn r1..rn, n = T/2 (odd T: a last random token), symbols of the task.
TaskBatch induction_probe(const Task& task, int64_t rows, uint64_t seed);
// Copying scores of every head of layer `layer` (see above).
std::vector<double> copying_scores(TrainableStack& model, int64_t layer);
// All three scores of every head, on the probe of (rows, seed); step and loss left 0.
InductionScores induction_scores(TrainableStack& model, const Task& task, int64_t rows, uint64_t seed, int threads);

struct PhaseChange {
    bool found = false;
    int64_t step = -1;                // the first evaluation at or below the midpoint
    int64_t start = -1, end = -1;     // the span of the drop (90% -> 10% levels)
    double plateau = 0, final = 0;    // ln S and the last eval loss
};
// steps and losses of the eval curve (same length, steps ascending); plateau = ln S.
PhaseChange find_phase_change(const std::vector<int64_t>& steps, const std::vector<double>& losses, double plateau);

struct ScoredHead {
    int64_t layer = -1, head = -1;
    double score = 0;
};
// The head of `layer` with the largest score (the first on ties).
ScoredHead best_head(const PerHead& scores, int64_t layer);

// The eval loss (task's scored tokens, evaluate_task's batches) with the listed heads'
// outputs zeroed; the model is left as it was.
double ablated_loss(TrainableStack& model, const Task& task, const std::vector<std::pair<int64_t, int64_t>>& heads,
                    int64_t batch, uint64_t seed, int64_t batches, int threads);

// A whole run's story: the scores at every evaluation, the phase change, the two heads found
// and what ablating them costs.
struct InductionRun {
    std::vector<InductionScores> trace;  // one per evaluation of the training curve
    PhaseChange phase;
    ScoredHead prev_head;       // layer 0, the largest previous-token score
    ScoredHead induction_head;  // the last layer, the largest prefix-matching score
    double loss = 0;            // eval loss of the trained model (the task's eval batches)
    PerHead ablation;           // eval loss with each head's output zeroed, alone
    double both = 0;            // eval loss with the two heads found zeroed together
};

inline constexpr int64_t kInductionProbeRows = 16;

// Records induction_scores at every evaluation of a training run: call it from the
// train_model callback with the model being trained.
class InductionObserver {
public:
    InductionObserver(const Task& task, uint64_t seed, int threads) : task_(&task), seed_(seed), threads_(threads) {}
    void observe(TrainableStack& model, const CurvePoint& point);
    std::vector<InductionScores>& trace() { return trace_; }

private:
    const Task* task_;
    uint64_t seed_;
    int threads_;
    std::vector<InductionScores> trace_;
};

// The phase change of the trace (plateau ln S), the heads found, and the ablations on
// evaluate_task's batches (batch rows, eval_batches of them, from seed).
InductionRun finish_induction(TrainableStack& model, const Task& task, std::vector<InductionScores> trace,
                              int64_t batch, uint64_t seed, int64_t eval_batches, int threads);

}  // namespace attn
