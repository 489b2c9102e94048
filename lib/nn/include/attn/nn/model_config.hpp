// attn/nn/model_config.hpp: the configuration of the Transformer attn trains (TrainableStack,
// attn/nn/trainable_stack.hpp): sizes, scale, dropout, positions, activation, initialisation, and
// the knobs of the experiments and the tests (a pad token, a planted bug, the attention kind,
// dropout on the scores, head ablation and gradient blocking). A header of its own so that the
// attention those knobs select (src/variant_attention.hpp) needs the config, not the model.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/init.hpp"

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

}  // namespace attn
