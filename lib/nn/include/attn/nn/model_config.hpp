// attn/nn/model_config.hpp: the configuration of the Transformer attn trains (TrainableStack,
// attn/nn/trainable_stack.hpp): sizes, scale, dropout, positions, activation, initialisation, and
// the knobs of the experiments and the tests (a pad token, a planted bug, the attention kind,
// dropout on the scores, head ablation and gradient blocking). A header of its own so that
// what reads a config needs the config, not the model. The knobs' enums (AttnBug, AttnKind,
// AttnVariant, DropWhere) are the variant attention kernel's (attn/cpu/attention_knobs.hpp);
// variant_knobs() hands one layer's to it.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/init.hpp"
#include "attn/cpu/attention_knobs.hpp"

namespace attn {

enum class PosKind { Learned, Sinusoidal, None };
enum class Activation { Gelu, Relu };

const char* pos_kind_name(PosKind p);       // "learned", "sinusoidal", "none"
const char* activation_name(Activation a);  // "gelu", "relu"

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
    // true when any of them is set (the whole-batch path with cpu::variant_attention_forward)
    bool attention_variant() const;

    // Throws InputError naming the field ("heads: must divide d_model (64 / 5), or give d_k").
    void validate() const;
    // d_k, d_v, d_ff filled in; validated.
    ModelConfig resolved() const;
};

// Layer l's knobs for the variant attention kernel (attn/cpu/variant_attention.hpp) from a
// resolved config c: its sizes, rules, this layer's FAVOR+ seed (feature_seed + l) and its
// rows of head_off and head_blocked. c must outlive the knobs (they point into it).
cpu::VariantKnobs variant_knobs(const ModelConfig& c, int64_t l);

}  // namespace attn
