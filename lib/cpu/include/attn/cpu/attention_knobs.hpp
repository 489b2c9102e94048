// attn/cpu/attention_knobs.hpp: the knobs of the variant attention kernel
// (attn/cpu/variant_attention.hpp): a planted bug, the attention kind, where dropout acts, and
// the plain struct of one layer's knobs that the kernel takes. A header of its own so that the
// trained model's config (attn/nn/model_config.hpp) holds the same enums without the kernel:
// each enum is defined here only.
#pragma once

#include <cstdint>

namespace attn {

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

namespace cpu {

// One layer's knobs for variant_attention_forward / _backward (attn/cpu/variant_attention.hpp).
// lib/nn fills them from its ModelConfig (nn::variant_knobs).
struct VariantKnobs {
    int64_t heads = 1;  // H
    int64_t d_k = 0;    // Dk: q, k are (B, T, H*Dk)
    int64_t d_v = 0;    // Dv: v, out are (B, T, H*Dv)
    bool causal = true;
    int32_t pad_token = -1;  // keys holding this token are masked (from the tokens); -1: none
    AttnBug bug = AttnBug::None;
    AttnVariant variant;     // feature_seed: this layer's own (the model's + l)
    DropWhere drop_where = DropWhere::Weights;
    // heads entries each (this layer's) or null: 1 = the head's output is zeroed, forward and
    // backward (ablation) / its q, k, v get no gradient (a stop-gradient at the head)
    const uint8_t* head_off = nullptr;
    const uint8_t* head_blocked = nullptr;
};

}  // namespace cpu
}  // namespace attn
