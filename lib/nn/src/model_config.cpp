// The configuration of the trained Transformer (attn/nn/model_config.hpp): the names of its
// kinds, its validation, its resolved sizes and one layer's knobs for the variant attention kernel.
#include "attn/nn/model_config.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "attn/core/dropout.hpp"
#include "attn/core/errors.hpp"

namespace attn {

const char* pos_kind_name(PosKind p) {
    switch (p) {
        case PosKind::Learned: return "learned";
        case PosKind::Sinusoidal: return "sinusoidal";
        case PosKind::None: return "none";
    }
    return "?";
}
const char* activation_name(Activation a) { return a == Activation::Gelu ? "gelu" : "relu"; }

namespace {

// The part of ModelConfig::validate for the experiments' knobs; dk, dv resolved.
void validate_variant(const ModelConfig& c, int64_t dk, int64_t dv) {
    const auto n = static_cast<size_t>(c.layers * c.heads);
    if (!c.head_off.empty() && c.head_off.size() != n)
        throw InputError(fmt::format("head_off: needs layers * heads = {} entries (got {})", n, c.head_off.size()));
    if (!c.head_blocked.empty() && c.head_blocked.size() != n)
        throw InputError(
            fmt::format("head_blocked: needs layers * heads = {} entries (got {})", n, c.head_blocked.size()));
    const AttnVariant& a = c.variant;
    if ((a.kind == AttnKind::Window || a.kind == AttnKind::GlobalLocal) && a.window < 1)
        throw InputError(fmt::format("variant: the attention window must be at least 1 (got {})", a.window));
    if (a.kind == AttnKind::Strided && a.stride < 1)
        throw InputError(fmt::format("variant: the stride must be at least 1 (got {})", a.stride));
    if (a.kind == AttnKind::GlobalLocal && a.global < 0)
        throw InputError(fmt::format("variant: the global token count must be at least 0 (got {})", a.global));
    if (a.kind == AttnKind::Favor && a.features < 1)
        throw InputError(fmt::format("variant: FAVOR+ needs at least 1 feature (got {})", a.features));
    if (!c.attention_variant()) return;
    if (c.scale.kind == ScaleKind::Cosine || c.pad_token >= 0 || c.bug != AttnBug::None)
        throw InputError("variant: an attention variant, dropout on the scores or a head mask runs with the sqrt, "
                         "none or a constant scale, no pad token and no planted bug");
    if (attn_kind_linear(a.kind)) {
        if (c.dropout > 0.0f || !c.head_off.empty() || !c.head_blocked.empty())
            throw InputError(fmt::format("variant: {} attention takes no dropout, head_off or head_blocked",
                                         attn_kind_name(a.kind)));
        if (dk != dv) throw InputError(fmt::format("variant: {} attention needs d_k = d_v", attn_kind_name(a.kind)));
    }
}

}  // namespace

void ModelConfig::validate() const {
    auto positive = [](int64_t v, const char* field) {
        if (v <= 0) throw InputError(std::string(field) + ": must be at least 1 (got " + std::to_string(v) + ")");
    };
    positive(vocab, "vocab");
    positive(max_seq, "max_seq");
    positive(d_model, "d_model");
    positive(heads, "heads");
    positive(layers, "layers");
    if (d_k < 0)
        throw InputError("d_k: must be at least 1, or 0 for d_model / heads (got " + std::to_string(d_k) + ")");
    if (d_v < 0) throw InputError("d_v: must be at least 1, or 0 for d_k (got " + std::to_string(d_v) + ")");
    if (d_ff < 0) throw InputError("d_ff: must be at least 1, or 0 for 4 * d_model (got " + std::to_string(d_ff) + ")");
    if (d_k == 0 && d_model % heads != 0)
        throw InputError(fmt::format("heads: must divide d_model ({} / {}), or give d_k", d_model, heads));
    if (vocab > (int64_t{1} << 30)) throw InputError("vocab: at most 2^30 tokens");
    check_dropout(dropout, "dropout");
    if (scale.kind == ScaleKind::Cosine && !(scale.value > 0.0f && std::isfinite(scale.value)))
        throw InputError("scale: the cosine temperature must be positive");
    if (learn_temperature && scale.kind != ScaleKind::Cosine)
        throw InputError("scale: a learned temperature needs the cosine scale");
    // the range attn's --scale takes for a constant (a scale of 0 or below makes every row uniform or inverted)
    if (scale.kind == ScaleKind::Constant && !(scale.value >= 1e-6f && scale.value <= 1e6f))
        throw InputError(fmt::format("scale: a constant scale must be in [1e-06, 1e+06] (got {})", scale.value));
    if (!(qk_init_gain > 0.0f && qk_init_gain <= kMaxQkInitGain))
        throw InputError(fmt::format("qk_init_gain: must be in (0, {:g}], got {}", kMaxQkInitGain, qk_init_gain));
    if (pad_token < -1 || (pad_token >= 0 && pad_token >= vocab))
        throw InputError("pad_token: must be -1 or a token id below vocab (got " + std::to_string(pad_token) + ")");
    if (bug != AttnBug::None && dropout > 0.0f) throw InputError("bug: a planted bug runs without dropout");
    const int64_t dk = d_k ? d_k : d_model / heads, dv = d_v ? d_v : dk, ff = d_ff ? d_ff : 4 * d_model;
    validate_variant(*this, dk, dv);
    // every parameter tensor must be addressable: a rough cap on the total
    const double total = double(vocab) * double(d_model) * 2 + double(max_seq) * double(d_model) +
                         double(layers) * (double(d_model) * double(heads) * double(2 * dk + 2 * dv) +
                                           2.0 * double(d_model) * double(ff));
    if (total > 4e9) throw InputError("d_model: the model would have more than 4e9 parameters");
}

bool ModelConfig::attention_variant() const {
    return variant.kind != AttnKind::Softmax || drop_where == DropWhere::Scores || !head_off.empty() ||
           !head_blocked.empty();
}

cpu::VariantKnobs variant_knobs(const ModelConfig& c, int64_t l) {
    cpu::VariantKnobs k;
    k.heads = c.heads;
    k.d_k = c.d_k;
    k.d_v = c.d_v;
    k.causal = c.causal;
    k.pad_token = c.pad_token;
    k.bug = c.bug;
    k.variant = c.variant;
    k.variant.feature_seed = c.variant.feature_seed + static_cast<uint64_t>(l);
    k.drop_where = c.drop_where;
    const size_t first = static_cast<size_t>(l * c.heads);
    if (!c.head_off.empty()) k.head_off = c.head_off.data() + first;
    if (!c.head_blocked.empty()) k.head_blocked = c.head_blocked.data() + first;
    return k;
}

ModelConfig ModelConfig::resolved() const {
    validate();
    ModelConfig c = *this;
    if (c.d_k == 0) c.d_k = c.d_model / c.heads;
    if (c.d_v == 0) c.d_v = c.d_k;
    if (c.d_ff == 0) c.d_ff = 4 * c.d_model;
    return c;
}

}  // namespace attn
