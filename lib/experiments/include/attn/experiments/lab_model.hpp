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
//   - no positional information at all (C4, experiment distance and lesson 17);
//   - the attention itself (C42, C43, experiment length): softmax over every key (the
//     default), softmax under a sparse pattern (sliding window, strided, global + local:
//     the rules of attn/core/mask.hpp, applied as masks inside the per-pair attention, so
//     a masked score has weight 0 and gets no gradient), or linear attention with the
//     feature maps of attn/cpu/linear_attention.hpp (elu+1, FAVOR+ with a fixed draw of m
//     features per layer, cosFormer), run by that library's forward and backward.
// Built on the attn/train ops (the fast twins for the linear layers, LayerNorm, GELU and
// cross-entropy; attention written here, per (batch, head) pair, in the reference's order).
// Deterministic: the same numbers at any thread count (the ops' guarantee; attention pairs
// are independent). Templated on the scalar so the gradient can be checked in double
// against finite differences (tests/test_experiments_lab.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/transformer.hpp"

namespace attn::lab {

enum class DropWhere { Weights, Scores };
enum class Positions { None, Learned, Sinusoidal };
const char* positions_name(Positions p);  // "none", "learned", "sinusoidal"

// Which attention the layers run (experiment length, C42-C44).
enum class AttnKind { Softmax, Window, Strided, GlobalLocal, EluPlusOne, Favor, CosFormer };
// "softmax", "window", "strided", "global+local", "elu+1", "favor+", "cosformer"
const char* attn_kind_name(AttnKind k);
// True for the linear-attention kinds (no T x T weights exist).
bool attn_kind_linear(AttnKind k);

struct LabAttention {
    AttnKind kind = AttnKind::Softmax;
    int64_t window = 16;         // Window, GlobalLocal: width w (Mask::sliding_window, Mask::global_local)
    int64_t stride = 8;          // Strided: s (Mask::strided)
    int64_t global = 2;          // GlobalLocal: g tokens 0..g-1 see and are seen by all
    int64_t features = 32;       // Favor: m random features
    uint64_t feature_seed = 0;   // Favor: the draw's seed (layer l uses feature_seed + l), fixed during training
};

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
    // The attention (softmax by default). Linear kinds take no dropout, head_off or head_blocked.
    LabAttention attn;
};

// Names and shapes of the parameters, in order.
std::vector<std::pair<std::string, Shape>> lab_param_shapes(const LabConfig& c);

struct LabStats {
    double loss = 0;
    int64_t correct = 0, counted = 0;
};

// One forward (and, when grads is not empty, backward) pass. params / grads: one
// pointer per tensor of lab_param_shapes, in order; gradients are overwritten.
// train: dropout on (seeded by seed). weights_out (optional): per layer, P (B, H, T, T)
// (empty for the linear kinds).
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
