// attn/nn/trainable_stack.hpp: the Transformer stack that trains in C++ (decoder or encoder).
//
// A TrainableStack is a TransformerStack (attn/nn/stack.hpp) configured from a ModelConfig,
// plus what training adds: the gradients, the activations a step saves, and the training
// knobs of the config. Its weights live in the stack (stack()); params() points into them.
//
//   tokens (B, T) --tok_emb + pos--> x (B, T, D)
//   N blocks, pre-LayerNorm:
//       x = x + MHA(LN1(x))          q, k, v, o projections as nn.MultiheadAttention,
//                                    causal mask for a decoder, none for an encoder
//       x = x + W2 act(W1 LN2(x) + b1) + b2     W1 (F, D), W2 (D, F), act GELU(tanh) or ReLU
//   LN_f(x) --head (V, D), no bias, separate from tok_emb (not tied)--> logits (B, T, V)
//   loss = cross_entropy(logits, targets, ignore_index=-1), mean over scored positions
//
// Positions: learned (the stack's pos_emb, a parameter), sinusoidal (pos_emb holds the fixed
// table) or none (PosKind::None, C4: pos_emb stays zero). The one weight the stack has no
// field for, the learned cosine temperature (log tau, one per layer), is kept beside the
// stack by the training side; a stack's own forward cannot run it (to_stack() refuses).
//
// Dropout (p = config.dropout) is applied to the attention weights (or, drop_where = Scores,
// to the scores before the softmax), in training steps, with the counter-based mask of
// attn/core/attention.hpp seeded per step and layer: the same numbers at any thread count.
//
// The knobs the training experiments turn are part of the config, not of a second model:
// no positions at all (PosKind::None, C4), dropout on the scores (C38), per-head ablation
// and gradient blocking (C32, C33), and the attention itself (AttnKind: softmax over every
// key, a sparse pattern, or linear attention; C42-C44). A config that uses any of them runs
// the whole batch as one chunk through the fast ops with lib/cpu's variant attention kernel
// (attn/cpu/variant_attention.hpp);
// the plain config keeps the fused fast path. The forward and backward passes are the stack's
// training path, lib/nn/src/stack_engine.hpp.
//
// Determinism: every parallel loop is split into fixed-size chunks (64 rows of
// activations; weight gradients by blocks of output rows, each summed over all tokens
// by one thread in a fixed order), so parameters after a step are bit-identical at
// any thread count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/model_config.hpp"
#include "attn/nn/stack.hpp"

namespace attn {

// One trainable tensor. Names follow PyTorch's state_dict: "tok_emb.weight",
// "pos_emb.weight" (learned positions only), "blocks.0.ln1.weight", "blocks.0.ln1.bias",
// "blocks.0.attn.q_proj.weight", ".bias" (and k_proj, v_proj, o_proj), "blocks.0.ln2.*",
// "blocks.0.mlp.fc1.weight", ".bias", "blocks.0.mlp.fc2.*", "ln_f.weight", "ln_f.bias",
// "head.weight" (with mlp = false, no ln2 and no mlp.* in any block), then with a learned cosine temperature
// "blocks.0.attn.log_tau" (1) for every layer (after head.weight, so the other parameters keep their places). decay:
// weight decay applies (matrices and embeddings; not biases, LayerNorm or log_tau).
struct Param {
    std::string name;
    Tensor* value;
    Tensor* grad;
    bool decay;
};

// The name and shape of every parameter of a model with this config, in params() order
// (no allocation: a checkpoint is checked against it before the model is built).
std::vector<std::pair<std::string, Shape>> param_shapes(const ModelConfig& cfg);

struct StepStats {
    double loss = 0;       // mean cross-entropy over scored positions
    int64_t correct = 0;   // scored positions whose argmax logit is the target
    int64_t counted = 0;   // scored positions (target != -1)
};

class TrainableStack {
public:
    // Validates; the stack's weights as TransformerStack makes them (zeros, LayerNorm gammas 1)
    // and log tau 0 until init().
    explicit TrainableStack(const ModelConfig& cfg);
    ~TrainableStack();
    TrainableStack(TrainableStack&&) noexcept;
    TrainableStack& operator=(TrainableStack&&) noexcept;

    const ModelConfig& config() const { return cfg_; }  // resolved
    // Fills every parameter from the seed (the same values at any thread count).
    void init(uint64_t seed);

    // tokens, targets: B*T int32, row-major (B, T); target -1 = not scored; T <= max_seq.
    // Forward + backward with dropout (seeded by step_seed); gradients overwritten.
    // Throws InputError on a token outside [0, vocab), a target outside [-1, vocab), T > max_seq.
    StepStats forward_backward(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                               uint64_t step_seed, int threads);
    // Forward only, no dropout, gradients untouched.
    StepStats evaluate(const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T, int threads);
    // Forward only, no dropout: logits (B, T, V).
    Tensor logits(const int32_t* tokens, int64_t B, int64_t T, int threads);
    // Per layer, the attention weights of the last forward pass (evaluate, logits or a
    // training step), (B, H, T, T), before dropout; empty tensors for the linear kinds.
    const std::vector<Tensor>& attention_weights() const;

    // Every trainable tensor in the order above: the stack's weights (and log tau) with their
    // gradients. The pointers stay valid as long as the model (moves included).
    std::vector<Param> params();
    int64_t num_params() const;
    // Ablation during evaluation: head_off as in ModelConfig (layers * heads entries or empty).
    void set_head_off(std::vector<uint8_t> off);
    // The weights, as a configuration of the Transformer stack: pre-norm, causal or not as
    // `causal`, its own head (not tied), the sinusoidal table (or zeros) in pos_emb. What the
    // config adds beyond the stack (a scale other than sqrt or none, log tau, a pad token, a
    // planted bug, a variant) is not in it: stack().forward() runs this model only when
    // to_stack() accepts it.
    const TransformerStack& stack() const;
    // stack(), checked: InputError "to_stack: the stack has no ..." for what the stack's own
    // forward does not run: a scale other than sqrt or none, a learned temperature, a pad
    // token, a planted bug, an attention variant or head ablation. Its forward gives logits()
    // to float32 rounding (tests/test_nn_stack.cpp).
    const TransformerStack& to_stack() const;
    // Readable reference ops (attn/nn/ops.hpp, one thread) instead of the fast path;
    // for tests that check the fast path against it.
    void set_reference_path(bool on) { reference_ = on; }

private:
    ModelConfig cfg_;
    bool reference_ = false;
    struct State;
    std::unique_ptr<State> st_;
};

// The embeddings (token and learned positions) drawn again from N(0, std^2) after
// init(), one Rng stream per tensor from `seed`: nn.Embedding's N(0, 1) is what `attn
// train` and the training experiments use (with GPT-2's 0.02 the recall task sits on a
// plateau for thousands of steps, in PyTorch too). std in [kMinEmbStd, kMaxEmbStd],
// else InputError "emb_std: ..." (check_emb_std, for a check before any work).
inline constexpr double kMinEmbStd = 1e-6, kMaxEmbStd = 100;
void check_emb_std(double std);
void redraw_embeddings(TrainableStack& model, uint64_t seed, double std);
// A fresh model as `attn train` starts one: every parameter from init(mix64(seed ^ "init")),
// then redraw_embeddings(model, seed, emb_std).
void init_for_training(TrainableStack& model, uint64_t seed, double emb_std);

// Multiply-adds x 2 of one forward + backward step (the backward counted as 2x the
// forward's matmuls), for steps/s -> GFLOP/s.
double train_step_flops(const ModelConfig& cfg, int64_t B, int64_t T);

}  // namespace attn
