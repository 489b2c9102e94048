// attn/experiments/lab_model.hpp: a small pre-LayerNorm Transformer with the knobs the
// training experiments turn and attn/train's TinyTransformer does not have.
//
//   tokens (B, T) --tok_emb (+ pos: none, learned or sinusoidal)--> x (B, T, D)
//   layers x { x = x + o_proj(attention(q_proj(LN1 x), k_proj(LN1 x), v_proj(LN1 x)))
//              x = x + fc2(gelu(fc1(LN2 x)))       (only when mlp) }
//   LN_f x --head (V, D), no bias--> logits --> cross-entropy (ignore_index -1, mean)
//
// What it adds, per experiment:
//   - dropout on the attention weights after softmax (as TinyTransformer) OR on the
//     scores before it: S' = S * keep / (1 - p), then softmax (C38, experiment dropout);
//   - per head: ablation (the head's output is zeroed, forward and backward) and gradient
//     blocking (a stop-gradient at the head's q, k, v: its W_q, W_k, W_v rows get no
//     gradient and nothing flows back through it) (C32, C33, experiment heads);
//   - no positional information at all (C4, experiment distance and lesson 17).
// Built on the attn/train ops (the fast twins for the linear layers, LayerNorm, GELU and
// cross-entropy; attention written here, per (batch, head) pair, in the reference's order).
// Deterministic: the same numbers at any thread count (the ops' guarantee; attention pairs
// are independent). Templated on the scalar so the gradient can be checked in double
// against finite differences (tests/test_experiments_2.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/train/model.hpp"

namespace attn::lab {

enum class DropWhere { Weights, Scores };
enum class Positions { None, Learned, Sinusoidal };
const char* positions_name(Positions p);  // "none", "learned", "sinusoidal"

struct LabConfig {
    int64_t vocab = 0, max_seq = 0;
    int64_t d_model = 64, heads = 4, d_head = 16, layers = 1;
    int64_t d_ff = 0;  // 0: 4 d_model
    bool mlp = true, causal = true;
    Positions pos = Positions::Learned;
    float dropout = 0.0f;  // [0, 1)
    DropWhere drop_where = DropWhere::Weights;
    float qk_gain = 1.0f;  // W_q, W_k multiplied by this after init
    // embeddings (token, learned positions) ~ N(0, emb_std^2); 1 is nn.Embedding's default, with
    // which recall leaves its plateau quickly (README, Training)
    float emb_std = 0.02f;
    // layers * heads entries or empty (none): 1 = the head is zeroed / its gradient blocked.
    std::vector<uint8_t> head_off, head_blocked;
};

// Names and shapes of the parameters, in order.
std::vector<std::pair<std::string, Shape>> lab_param_shapes(const LabConfig& c);

struct LabStats {
    double loss = 0;
    int64_t correct = 0, counted = 0;
};

// One forward (and, when grads is not empty, backward) pass. params / grads: one
// pointer per tensor of lab_param_shapes, in order; gradients are overwritten.
// train: dropout on (seeded by seed). weights_out (optional): per layer, P (B, H, T, T).
template <class S>
LabStats lab_pass(const LabConfig& c, const std::vector<const S*>& params, const std::vector<S*>& grads,
                  const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T, bool train, uint64_t seed,
                  int threads, std::vector<std::vector<float>>* weights_out = nullptr);

class LabModel {
public:
    explicit LabModel(LabConfig c);  // throws InputError on a bad config
    LabConfig& config() { return cfg_; }
    const LabConfig& config() const { return cfg_; }
    // PyTorch-default Linear init (uniform +-1/sqrt(fan_in)), embeddings N(0, 0.02^2),
    // LayerNorm 1, 0; one Rng stream per tensor.
    void init(uint64_t seed);
    LabStats step(const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T, uint64_t seed, int threads);
    LabStats evaluate(const int32_t* tok, const int32_t* tgt, int64_t B, int64_t T, int threads,
                      std::vector<std::vector<float>>* weights_out = nullptr);
    std::vector<Param> params();  // for AdamW, Sgd, clip_grad_norm
    std::vector<Tensor>& values() { return w_; }
    int64_t num_params() const;

private:
    LabConfig cfg_;
    std::vector<std::string> names_;
    std::vector<Tensor> w_, g_;
};

}  // namespace attn::lab
