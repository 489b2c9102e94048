// attn/nn/transformer.hpp: a tiny Transformer that trains in C++ (decoder or encoder).
//
//   tokens (B, T) --tok_emb + pos--> x (B, T, D)
//   N blocks, pre-LayerNorm:
//       x = x + MHA(LN1(x))          q, k, v, o projections as nn.MultiheadAttention,
//                                    causal mask for a decoder, none for an encoder
//       x = x + W2 act(W1 LN2(x) + b1) + b2     W1 (F, D), W2 (D, F), act GELU(tanh) or ReLU
//   LN_f(x) --head (V, D), no bias, separate from tok_emb (not tied)--> logits (B, T, V)
//   loss = cross_entropy(logits, targets, ignore_index=-1), mean over scored positions
//
// Dropout (p = config.dropout) is applied to the attention weights (or, drop_where = Scores,
// to the scores before the softmax), in training steps, with the counter-based mask of
// attn/core/attention.hpp seeded per step and layer: the same numbers at any thread count.
//
// The knobs the training experiments turn are part of the config, not of a second model:
// no positions at all (PosKind::None, C4), dropout on the scores (C38), per-head ablation
// and gradient blocking (C32, C33), and the attention itself (AttnKind: softmax over every
// key, a sparse pattern, or linear attention; C42-C44). A config that uses any of them runs
// the whole batch as one chunk through the fast ops with that attention (variant_attention.cpp);
// the plain config keeps the fused fast path.
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

#include "attn/core/attention.hpp"
#include "attn/core/init.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/stack.hpp"

namespace attn {

enum class PosKind { Learned, Sinusoidal, None };
enum class Activation { Gelu, Relu };

const char* pos_kind_name(PosKind p);       // "learned", "sinusoidal", "none"
const char* activation_name(Activation a);  // "gelu", "relu"

// Bugs planted on purpose in the attention of every layer, for the overfit test of
// `attn experiment overfit` (C37): what a broken attention looks like when it trains.
// The backward pass is the exact gradient of the bugged forward (as autograd would
// give), so the bug is what trains, not a mismatch between the two passes.
enum class AttnBug {
    None,
    NoScale,           // scores q.k, the scale factor forgotten
    TransposedScores,  // S = K Q^T instead of Q K^T (S[i, j] = k_i . q_j)
    HeadMerge,         // out (B, H, T, Dv) read as (B, T, H*Dv) without the transpose
    InvertedMask,      // the mask's sense flipped: the allowed keys masked, the masked ones kept
    FillZero,          // masked scores set to 0 instead of -inf (they still get weight)
    QuerySideMask,     // the padding mask applied to the query rows instead of the key columns
};
const char* attn_bug_name(AttnBug b);  // "none", "no-scale", "k-q-transposed", "head-merge", ...

// Which attention the layers run (experiment length, C42-C44): softmax over every key (the
// default), softmax under a sparse pattern (sliding window, strided, global + local: the rules
// of attn/core/mask.hpp; a masked score has weight 0 and gets no gradient), or linear attention
// with the feature maps of attn/cpu/linear_attention.hpp (elu+1, FAVOR+ with a fixed draw of m
// features per layer, cosFormer), run by that library's forward and backward.
enum class AttnKind { Softmax, Window, Strided, GlobalLocal, EluPlusOne, Favor, CosFormer };
// "softmax", "window", "strided", "global+local", "elu+1", "favor+", "cosformer"
const char* attn_kind_name(AttnKind k);
bool attn_kind_linear(AttnKind k);  // true for the linear kinds (no T x T weights exist)

struct AttnVariant {
    AttnKind kind = AttnKind::Softmax;
    int64_t window = 16;        // Window, GlobalLocal: width w (Mask::sliding_window, Mask::global_local)
    int64_t stride = 8;         // Strided: s (Mask::strided)
    int64_t global = 2;         // GlobalLocal: tokens 0..global-1 see and are seen by all
    int64_t features = 32;      // Favor: m random features
    uint64_t feature_seed = 0;  // Favor: the draw's seed (layer l uses feature_seed + l), fixed during training
};

// Where dropout acts: on the attention weights after the softmax (PyTorch's place), or on the
// scores before it, S' = S * keep / (1 - p) (C38, experiment dropout).
enum class DropWhere { Weights, Scores };

// The largest ModelConfig::qk_init_gain (C36 needs gains of a few; more is a typo).
inline constexpr float kMaxQkInitGain = 1000.0f;

struct ModelConfig {
    int64_t vocab = 0;     // V
    int64_t max_seq = 0;   // Tmax: longest sequence (rows of the position table)
    int64_t d_model = 64;  // D
    int64_t heads = 4;     // H
    int64_t d_k = 0;       // 0: d_model / heads
    int64_t d_v = 0;       // 0: d_k
    int64_t layers = 2;
    int64_t d_ff = 0;      // 0: 4 * d_model
    bool causal = true;    // decoder (causal) or encoder (bidirectional)
    // false: attention-only blocks, x = x + MHA(LN1(x)) and nothing else (no ln2, no MLP,
    // no such parameters): the two-layer attention-only decoder of the induction-head papers
    bool mlp = true;
    Scale scale;           // sqrt, none, a constant, cosine (attn/core/attention.hpp)
    // Cosine only: the temperature is learned, one per layer, as a parameter log_tau
    // (scores = cos(q, k) * exp(-log_tau)), initialised to log(scale.value). Learning its
    // log keeps tau positive and makes the step size relative (QK-norm's learned scale).
    bool learn_temperature = false;
    float dropout = 0.0f;  // attention-weight dropout probability, [0, 1)
    PosKind pos = PosKind::Learned;
    Activation act = Activation::Gelu;
    InitSpec init;         // for every Linear (attn/core/init.hpp); embeddings are N(0, 0.02^2)
    float qk_init_gain = 1.0f;  // q_proj and k_proj weights multiplied by this after init (C36), in (0, kMaxQkInitGain]
    // Keys holding this token are masked (PyTorch's key_padding_mask, from the tokens);
    // -1: none. With a pad token or a bug the model runs the reference ops (one thread).
    int32_t pad_token = -1;
    AttnBug bug = AttnBug::None;  // a planted bug (tests and the overfit experiment); no dropout with one
    // The experiments' knobs (see the top of this file). They run with the sqrt, none or a
    // constant scale, no pad token and no planted bug; the linear kinds also need d_k = d_v and
    // take no dropout, head_off or head_blocked.
    AttnVariant variant;
    DropWhere drop_where = DropWhere::Weights;
    // layers * heads entries (layer-major) or empty: 1 = the head's output is zeroed, forward
    // and backward (ablation) / its q, k, v get no gradient (a stop-gradient at the head).
    std::vector<uint8_t> head_off, head_blocked;
    // true when any of them is set (the whole-batch path with variant_attention)
    bool attention_variant() const;

    // Throws InputError naming the field ("heads: must divide d_model (64 / 5), or give d_k").
    void validate() const;
    // d_k, d_v, d_ff filled in; validated.
    ModelConfig resolved() const;
};

// One trainable tensor. Names follow PyTorch's state_dict: "tok_emb.weight",
// "pos_emb.weight" (learned positions only), "blocks.0.ln1.weight", "blocks.0.ln1.bias",
// "blocks.0.attn.q_proj.weight", ".bias" (and k_proj, v_proj, o_proj), "blocks.0.ln2.*",
// "blocks.0.mlp.fc1.weight", ".bias", "blocks.0.mlp.fc2.*", "ln_f.weight", "ln_f.bias",
// "head.weight" (with mlp = false, no ln2 and no mlp.* in any block), then with a learned cosine temperature "blocks.0.attn.log_tau" (1) for every
// layer (after head.weight, so the other parameters keep their places).
// decay: weight decay applies (matrices and embeddings; not biases, LayerNorm or log_tau).
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

class TinyTransformer {
public:
    explicit TinyTransformer(const ModelConfig& cfg);  // validates; parameters zero until init()
    ~TinyTransformer();
    TinyTransformer(TinyTransformer&&) noexcept;
    TinyTransformer& operator=(TinyTransformer&&) noexcept;

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

    std::vector<Param> params();
    int64_t num_params() const;
    // Ablation during evaluation: head_off as in ModelConfig (layers * heads entries or empty).
    void set_head_off(std::vector<uint8_t> off);
    // The same model as a configuration of the Transformer stack (attn/nn/stack.hpp): pre-norm,
    // causal or not as `causal`, its own head (not tied), every weight copied; sinusoidal
    // positions (or none) become a fixed table (zeros). Its forward gives logits() to float32
    // rounding (tests/test_nn_stack.cpp). InputError for what the stack does not run: a scale
    // other than sqrt or none, a learned temperature, a pad token, a planted bug, an
    // attention variant or head ablation.
    TransformerStack to_stack() const;
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
void redraw_embeddings(TinyTransformer& model, uint64_t seed, double std);
// A fresh model as `attn train` starts one: every parameter from init(mix64(seed ^ "init")),
// then redraw_embeddings(model, seed, emb_std).
void init_for_training(TinyTransformer& model, uint64_t seed, double emb_std);

// The same forward + backward in double precision through the reference ops, for
// finite-difference checks: params are the model's parameters in params() order (as
// double), the return value is the mean loss, and grads (if not null) gets d loss / d param
// in the same layout. train = true applies dropout with step_seed, as forward_backward does.
double loss_and_grads_f64(const ModelConfig& cfg, const std::vector<std::vector<double>>& params,
                          const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T,
                          std::vector<std::vector<double>>* grads, bool train = false, uint64_t step_seed = 0);

// Multiply-adds x 2 of one forward + backward step (the backward counted as 2x the
// forward's matmuls), for steps/s -> GFLOP/s.
double train_step_flops(const ModelConfig& cfg, int64_t B, int64_t T);

}  // namespace attn
