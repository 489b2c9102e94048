// stack.cpp: the Transformer stack's configuration, its weights' shapes, and its readable
// one-sequence forward and KV-cache step (see attn/nn/stack.hpp).
#include "attn/nn/stack.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn/core/attention.hpp"
#include "attn/core/errors.hpp"
#include "attn/nn/fast_ops.hpp"
#include "attn/nn/kv_store.hpp"

namespace attn {

const char* norm_place_name(NormPlace n) {
    switch (n) {
        case NormPlace::Pre: return "pre";
        case NormPlace::Post: return "post";
        case NormPlace::None: return "none";
    }
    return "?";
}

AttentionOptions StackConfig::attention_options() const {
    AttentionOptions opt;
    if (!scale) opt.scale.kind = ScaleKind::None;
    return opt;
}

StackConfig StackConfig::resolved() const {
    StackConfig c = *this;
    auto positive = [](int64_t v, const char* name, int64_t lo) {
        if (v < lo) throw InputError(fmt::format("stack: {} must be >= {}, got {}", name, lo, v));
    };
    positive(c.vocab, "vocab", 0);
    positive(c.positions, "positions", c.vocab > 0 ? 1 : 0);
    positive(c.d_model, "d_model", 1);
    positive(c.heads, "heads", 1);
    positive(c.layers, "layers", 0);
    positive(c.token_types, "token_types", 0);
    if (c.d_k == 0) {
        if (c.d_model % c.heads != 0)
            throw InputError(
                fmt::format("stack: heads must divide d_model ({} / {}), or give d_k", c.d_model, c.heads));
        c.d_k = c.d_model / c.heads;
    }
    if (c.d_v == 0) c.d_v = c.d_k;
    if (c.d_ff == 0) c.d_ff = 4 * c.d_model;
    positive(c.d_k, "d_k", 1);
    positive(c.d_v, "d_v", 1);
    positive(c.d_ff, "d_ff", 1);
    if (!(c.eps > 0.0f && c.eps < 1.0f)) throw InputError(fmt::format("stack: eps must be in (0, 1), got {}", c.eps));
    if (c.mlp && c.act == MlpActivation::None)
        throw InputError("stack: an MLP needs an activation (gelu-tanh, gelu-erf or relu)");
    if (c.vocab == 0 && (c.lm_head || c.token_types > 0))
        throw InputError("stack: a head or token types need a vocabulary (vocab 0: vectors in, hidden states out)");
    return c;
}

TransformerStack::TransformerStack(const StackConfig& cfg) : config(cfg.resolved()) {
    const StackConfig& c = config;
    const int64_t D = c.d_model, F = c.d_ff;
    const bool norm = c.norm != NormPlace::None;
    if (c.vocab > 0) {
        tok_emb = Tensor({c.vocab, D});
        pos_emb = Tensor({c.positions, D});
    }
    if (c.token_types > 0) type_emb = Tensor({c.token_types, D});
    Tensor& g = c.norm == NormPlace::Post ? emb_ln_gamma : lnf_gamma;
    Tensor& b = c.norm == NormPlace::Post ? emb_ln_beta : lnf_beta;
    if (norm) {
        g = Tensor({D}, 1.0f);
        b = Tensor({D});
    }
    for (int64_t l = 0; l < c.layers; ++l) {
        StackLayer L;
        L.attention = MultiHeadAttention(MhaConfig{D, c.heads, c.d_k, c.d_v, c.bias});
        if (norm) {
            L.ln1_gamma = Tensor({D}, 1.0f);
            L.ln1_beta = Tensor({D});
        }
        if (c.mlp) {
            if (norm) {
                L.ln2_gamma = Tensor({D}, 1.0f);
                L.ln2_beta = Tensor({D});
            }
            L.fc = Linear(D, F, c.bias);
            L.proj = Linear(F, D, c.bias);
        }
        layers.push_back(std::move(L));
    }
    if (c.lm_head && !c.tied_head) lm_head = Tensor({c.vocab, D});
}

void TransformerStack::check_shapes(const std::string& who) const {
    const StackConfig& c = config;
    const int64_t D = c.d_model, F = c.d_ff, QK = c.heads * c.d_k, VV = c.heads * c.d_v;
    const bool norm = c.norm != NormPlace::None;
    auto want = [&](const Tensor& t, const Shape& s, const std::string& name) {
        if (t.shape != s)
            throw InputError(
                fmt::format("{}: {} is {}, the config needs {}", who, name, shape_str(t.shape), shape_str(s)));
    };
    auto linear = [&](const Linear& lin, int64_t out, int64_t in, const std::string& name) {
        want(lin.W, {out, in}, name + " weight");
        want(lin.b, c.bias ? Shape{out} : Shape{}, name + " bias");
    };
    if (c.vocab > 0) {
        want(tok_emb, {c.vocab, D}, "the token embedding");
        want(pos_emb, {c.positions, D}, "the position table");
    }
    if (c.token_types > 0) want(type_emb, {c.token_types, D}, "the token-type embedding");
    const bool post = c.norm == NormPlace::Post;
    if (norm) {
        want(post ? emb_ln_gamma : lnf_gamma, {D}, post ? "the embedding LayerNorm" : "the final LayerNorm");
        want(post ? emb_ln_beta : lnf_beta, {D},
             post ? "the embedding LayerNorm's bias" : "the final LayerNorm's bias");
    }
    if (static_cast<int64_t>(layers.size()) != c.layers)
        throw InputError(fmt::format("{}: {} blocks, the config says {}", who, layers.size(), c.layers));
    for (int64_t l = 0; l < c.layers; ++l) {
        const StackLayer& L = layers[static_cast<size_t>(l)];
        const std::string p = fmt::format("block {} ", l);
        if (norm) {
            want(L.ln1_gamma, {D}, p + "ln1 weight");
            want(L.ln1_beta, {D}, p + "ln1 bias");
        }
        const MultiHeadAttention& a = L.attention;
        linear(a.q_proj, QK, D, p + "q_proj");
        linear(a.k_proj, QK, D, p + "k_proj");
        linear(a.v_proj, VV, D, p + "v_proj");
        linear(a.o_proj, D, VV, p + "o_proj");
        if (!c.mlp) continue;
        if (norm) {
            want(L.ln2_gamma, {D}, p + "ln2 weight");
            want(L.ln2_beta, {D}, p + "ln2 bias");
        }
        linear(L.fc, F, D, p + "fc");
        linear(L.proj, D, F, p + "proj");
    }
    if (c.lm_head && !c.tied_head) want(lm_head, {c.vocab, D}, "the head");
}

const Tensor& ActivationCache::at(const std::string& name) const {
    const auto it = tensors.find(name);
    if (it == tensors.end()) throw InputError(fmt::format("the activation cache has no tensor '{}'", name));
    return it->second;
}

void ActivationCache::put(const std::string& name, Tensor t) {
    if (tensors.find(name) == tensors.end()) order.push_back(name);
    tensors[name] = std::move(t);
}

const char* ablation_mode_name(AblationMode m) { return m == AblationMode::Mean ? "mean" : "zero"; }

std::vector<std::string> TransformerStack::cache_names() const {
    const StackConfig& c = config;
    const bool pre = c.norm == NormPlace::Pre, post = c.norm == NormPlace::Post;
    std::vector<std::string> n;
    if (c.vocab > 0) n = {"hook_embed", "hook_pos_embed"};
    if (c.token_types > 0) n.push_back("hook_token_type_embed");
    if (post) n.push_back("embed.ln.hook_normalized");
    for (int64_t l = 0; l < c.layers; ++l) {
        std::vector<const char*> s{"hook_resid_pre"};
        if (pre) s.push_back("ln1.hook_normalized");
        for (const char* a : {"attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_attn_scores", "attn.hook_pattern",
                              "attn.hook_z", "hook_attn_out", "hook_resid_mid"})
            s.push_back(a);
        if (post) s.push_back("ln1.hook_normalized");
        if (c.mlp) {
            if (pre) s.push_back("ln2.hook_normalized");
            for (const char* m : {"mlp.hook_pre", "mlp.hook_post", "hook_mlp_out"}) s.push_back(m);
            if (post) s.push_back("ln2.hook_normalized");
        }
        s.push_back("hook_resid_post");
        for (const char* name : s) n.push_back(fmt::format("blocks.{}.{}", l, name));
    }
    if (pre) n.push_back("ln_final.hook_normalized");
    if (c.lm_head) n.push_back("logits");
    return n;
}

namespace {

// rows of x (rows, D) -> LayerNorm (lib/nn's) into a fresh tensor of x's shape
Tensor layer_norm(const Tensor& x, const Tensor& g, const Tensor& b, float eps) {
    Tensor h(x.shape);
    const int64_t D = g.numel(), N = x.numel() / D;
    std::vector<float> mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N));
    nn::layernorm_forward_fast(h.ptr(), mean.data(), rstd.data(), x.ptr(), g.ptr(), b.ptr(), N, D, 1, eps);
    return h;
}

void add_into(Tensor& x, const Tensor& a) {
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] += a.data[i];
}

// z (B, H, T, Dv): head h's slice of every batch row replaced, in place, as `mode` says.
void ablate_head(Tensor& z, int64_t h, AblationMode mode) {
    const int64_t B = z.dim(0), H = z.dim(1), T = z.dim(2), Dv = z.dim(3);
    for (int64_t b = 0; b < B; ++b) {
        float* zh = z.ptr() + (b * H + h) * T * Dv;  // (T, Dv)
        if (mode == AblationMode::Zero) {
            std::fill(zh, zh + T * Dv, 0.0f);
            continue;
        }
        for (int64_t d = 0; d < Dv; ++d) {
            double sum = 0;
            for (int64_t t = 0; t < T; ++t) sum += zh[t * Dv + d];
            const float mean = static_cast<float>(sum / static_cast<double>(T));
            for (int64_t t = 0; t < T; ++t) zh[t * Dv + d] = mean;
        }
    }
}

void check_ids(const std::vector<int32_t>& ids, int64_t first_pos, const StackConfig& c, const std::string& vocab) {
    if (first_pos + static_cast<int64_t>(ids.size()) > c.positions)
        throw InputError(fmt::format("{} tokens are more than the model's {} positions",
                                     first_pos + static_cast<int64_t>(ids.size()), c.positions));
    for (int32_t id : ids)
        if (id < 0 || id >= c.vocab)
            throw InputError(
                fmt::format("token id {} is outside the vocabulary of {} (0..{})", id, vocab, c.vocab - 1));
}

// The ablated heads of each layer; InputError for a head outside the model or named twice.
std::vector<std::vector<int64_t>> ablated_heads(const std::vector<HeadRef>& ablate, const StackConfig& c) {
    std::vector<std::vector<int64_t>> out(static_cast<size_t>(c.layers));
    for (size_t k = 0; k < ablate.size(); ++k) {
        const HeadRef& r = ablate[k];
        if (r.layer < 0 || r.layer >= c.layers || r.head < 0 || r.head >= c.heads)
            throw InputError(fmt::format("head {}.{} is outside the model ({} layers x {} heads)", r.layer, r.head,
                                         c.layers, c.heads));
        if (std::find(ablate.begin(), ablate.begin() + static_cast<std::ptrdiff_t>(k), r) !=
            ablate.begin() + static_cast<std::ptrdiff_t>(k))
            throw InputError(fmt::format("head {}.{} is ablated twice", r.layer, r.head));
        out[static_cast<size_t>(r.layer)].push_back(r.head);
    }
    return out;
}

// f in place through the MLP's activation: LN'd input -> fc -> act -> proj, returning proj's output
Tensor mlp(const StackLayer& L, const Tensor& h, MlpActivation act, Tensor* pre, Tensor* post) {
    Tensor f = L.fc.forward(h);
    if (pre != nullptr) *pre = f;
    apply_activation(f.ptr(), f.ptr(), f.numel(), act);
    if (post != nullptr) *post = f;
    return L.proj.forward(f);
}

// Records a tensor under its hook name when a cache is on (layer -1: a name outside the blocks).
struct Keeper {
    ActivationCache* cache;
    void operator()(int64_t l, const char* name, const Tensor& t) const {
        if (cache != nullptr) cache->put(l < 0 ? std::string(name) : fmt::format("blocks.{}.{}", l, name), t);
    }
};

// The blocks and LN_f on x (B, T, D), in place: what forward() and forward_vectors() share.
void run_blocks(const TransformerStack& st, Tensor& x, const StackOptions& opt, const AttentionOptions& aopt,
                StackOutput& out) {
    const StackConfig& c = st.config;
    const int64_t H = c.heads;
    const bool pre = c.norm == NormPlace::Pre, post = c.norm == NormPlace::Post;
    const std::vector<std::vector<int64_t>> ablated = ablated_heads(opt.ablate, c);
    const Keeper keep{opt.cache};
    const Mask mask = c.causal ? Mask::make_causal() : Mask::none();
    const bool record = opt.record_attention || opt.cache != nullptr;
    for (int64_t l = 0; l < c.layers; ++l) {
        const StackLayer& L = st.layers[static_cast<size_t>(l)];
        const MultiHeadAttention& mha = L.attention;
        if (opt.record_residual) out.residual.push_back(x);
        keep(l, "hook_resid_pre", x);
        // MultiHeadAttention::forward's steps written out, so that z can be read and
        // replaced before the output projection
        const Tensor h = pre ? layer_norm(x, L.ln1_gamma, L.ln1_beta, c.eps) : x;
        if (pre) keep(l, "ln1.hook_normalized", h);
        const Tensor q = split_heads(mha.q_proj.forward(h), H);  // (B, H, T, Dk)
        const Tensor k = split_heads(mha.k_proj.forward(h), H);  // (B, H, T, Dk)
        const Tensor v = split_heads(mha.v_proj.forward(h), H);  // (B, H, T, Dv)
        AttentionRecord rec;
        Tensor z = attention(Backend::Reference, q, k, v, mask, aopt, record ? &rec : nullptr, 1);  // (B, H, T, Dv)
        for (int64_t head : ablated[static_cast<size_t>(l)]) ablate_head(z, head, opt.ablation);
        const Tensor a = mha.o_proj.forward(merge_heads(z));  // (B, T, D)
        add_into(x, a);
        keep(l, "attn.hook_q", q);
        keep(l, "attn.hook_k", k);
        keep(l, "attn.hook_v", v);
        keep(l, "attn.hook_attn_scores", rec.scores_masked);
        keep(l, "attn.hook_pattern", rec.weights);
        keep(l, "attn.hook_z", z);
        keep(l, "hook_attn_out", a);
        keep(l, "hook_resid_mid", x);
        if (opt.record_attention) out.attentions.push_back(std::move(rec.weights));
        if (post) {
            x = layer_norm(x, L.ln1_gamma, L.ln1_beta, c.eps);
            keep(l, "ln1.hook_normalized", x);
        }
        if (c.mlp) {
            const Tensor h2 = pre ? layer_norm(x, L.ln2_gamma, L.ln2_beta, c.eps) : x;
            if (pre) keep(l, "ln2.hook_normalized", h2);
            const bool rec_mlp = opt.cache != nullptr;
            Tensor before, after;
            const Tensor o = mlp(L, h2, c.act, rec_mlp ? &before : nullptr, rec_mlp ? &after : nullptr);  // (B, T, D)
            keep(l, "mlp.hook_pre", before);
            keep(l, "mlp.hook_post", after);
            add_into(x, o);
            keep(l, "hook_mlp_out", o);
            if (post) {
                x = layer_norm(x, L.ln2_gamma, L.ln2_beta, c.eps);
                keep(l, "ln2.hook_normalized", x);
            }
        }
        keep(l, "hook_resid_post", x);
    }
    if (opt.record_residual) out.residual.push_back(x);
    if (pre) {
        x = layer_norm(x, st.lnf_gamma, st.lnf_beta, c.eps);
        keep(-1, "ln_final.hook_normalized", x);
    }
}

}  // namespace

StackOutput TransformerStack::forward(const std::vector<int32_t>& ids, const StackOptions& opt,
                                      const std::string& vocab_name) const {
    // ids (T) -> hidden (1, T, D), logits (T, V), attentions L x (1, H, T, T)
    const StackConfig& c = config;
    if (c.vocab == 0) throw InputError("this stack has no vocabulary: give it vectors (forward_vectors)");
    if (ids.empty()) throw InputError("a forward pass needs at least one token");
    check_ids(ids, 0, c, vocab_name);
    const int64_t T = static_cast<int64_t>(ids.size()), D = c.d_model;
    const Keeper keep{opt.cache};
    StackOutput out;
    // x = tok_emb[ids] + pos_emb[t] (+ type_emb[0])   (1, T, D)
    Tensor e({1, T, D}), p({1, T, D});
    for (int64_t t = 0; t < T; ++t) {
        std::copy_n(tok_emb.ptr() + ids[static_cast<size_t>(t)] * D, D, e.ptr() + t * D);
        std::copy_n(pos_emb.ptr() + t * D, D, p.ptr() + t * D);
    }
    Tensor x({1, T, D});
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = e.data[i] + p.data[i];
    keep(-1, "hook_embed", e);
    keep(-1, "hook_pos_embed", p);
    if (c.token_types > 0) {
        Tensor ty({1, T, D});
        for (int64_t t = 0; t < T; ++t) std::copy_n(type_emb.ptr(), D, ty.ptr() + t * D);  // every token type 0
        add_into(x, ty);
        keep(-1, "hook_token_type_embed", ty);
    }
    if (c.norm == NormPlace::Post) {
        x = layer_norm(x, emb_ln_gamma, emb_ln_beta, c.eps);
        keep(-1, "embed.ln.hook_normalized", x);
    }
    run_blocks(*this, x, opt, c.attention_options(), out);
    if (c.lm_head) {  // logits = x head^T   (T, V)
        out.logits = Tensor({T, c.vocab});
        linear_forward(out.logits.ptr(), x.ptr(), head().ptr(), nullptr, T, D, c.vocab);
        keep(-1, "logits", out.logits);
    }
    out.hidden = std::move(x);
    return out;
}

StackOutput TransformerStack::forward_vectors(const Tensor& x, const StackOptions& opt,
                                              const AttentionOptions* options) const {
    if (x.rank() != 3 || x.dim(2) != config.d_model)
        throw ShapeError(fmt::format("the stack wants x (B, T, {}), got {}", config.d_model, shape_str(x.shape)));
    StackOutput out;
    Tensor h = x;
    run_blocks(*this, h, opt, options != nullptr ? *options : config.attention_options(), out);
    out.hidden = std::move(h);
    return out;
}

KvCache TransformerStack::make_cache(int64_t batch) const {
    return KvCache(config.layers, batch, config.heads, config.d_k, config.d_v);
}

Tensor TransformerStack::step(int32_t id, KvCache& cache, std::vector<Tensor>* attentions,
                              const std::string& vocab_name) const {
    // one token at position p = cache.length(): x (1, 1, D) -> logits (V)
    const StackConfig& c = config;
    if (c.vocab == 0) throw InputError("this stack has no vocabulary: give it vectors (step_vector)");
    const int64_t p = cache.length(), D = c.d_model;
    check_ids({id}, p, c, vocab_name);
    Tensor x({1, 1, D});
    for (int64_t d = 0; d < D; ++d)
        x.data[static_cast<size_t>(d)] =
            tok_emb.data[static_cast<size_t>(id * D + d)] + pos_emb.data[static_cast<size_t>(p * D + d)];
    if (c.token_types > 0)
        for (int64_t d = 0; d < D; ++d) x.data[static_cast<size_t>(d)] += type_emb.data[static_cast<size_t>(d)];
    if (c.norm == NormPlace::Post) x = layer_norm(x, emb_ln_gamma, emb_ln_beta, c.eps);
    x = step_vector(x, cache, attentions);
    if (!c.lm_head) {
        x.shape = {D};
        return x;
    }
    Tensor logits({c.vocab});
    linear_forward(logits.ptr(), x.ptr(), head().ptr(), nullptr, 1, D, c.vocab);
    return logits;
}

Tensor TransformerStack::step_vector(const Tensor& x_t, KvCache& cache, std::vector<Tensor>* attentions,
                                     std::vector<Tensor>* layer_out, const TraceFn* trace,
                                     const AttentionOptions* options) const {
    // one token's vectors x_t (B, 1, D) at position cache.length() -> (B, 1, D)
    const StackConfig& c = config;
    if (!c.causal) throw InputError("a KV-cache step needs a causal stack (later tokens would change earlier ones)");
    if (x_t.rank() != 3 || x_t.dim(1) != 1 || x_t.dim(2) != c.d_model)
        throw ShapeError(fmt::format("a step wants one token x_t (B, 1, {}), got {}", c.d_model, shape_str(x_t.shape)));
    if (cache.layers() != c.layers)
        throw ShapeError(fmt::format("the cache has {} layers, the stack {}", cache.layers(), c.layers));
    const int64_t H = c.heads;
    const bool pre = c.norm == NormPlace::Pre, post = c.norm == NormPlace::Post;
    const AttentionOptions aopt = options != nullptr ? *options : c.attention_options();
    auto emit = [&](std::string name, std::string formula, const Tensor& t) {
        if (trace != nullptr) (*trace)(TraceEvent{std::move(name), std::move(formula), t.shape, &t});
    };
    if (attentions != nullptr) attentions->clear();
    if (layer_out != nullptr) layer_out->clear();
    Tensor x = x_t;
    for (size_t l = 0; l < layers.size(); ++l) {
        const StackLayer& L = layers[l];
        const MultiHeadAttention& mha = L.attention;
        const Tensor h = pre ? layer_norm(x, L.ln1_gamma, L.ln1_beta, c.eps) : x;
        const Tensor q = split_heads(mha.q_proj.forward(h), H);  // (B, H, 1, Dk)
        cache.append(static_cast<int64_t>(l), split_heads(mha.k_proj.forward(h), H),
                     split_heads(mha.v_proj.forward(h), H));
        const Tensor K = cache.keys(static_cast<int64_t>(l));    // (B, H, t+1, Dk)
        const Tensor V = cache.values(static_cast<int64_t>(l));  // (B, H, t+1, Dv)
        // the one query sees every cached key: no mask needed (attn/nn/kv_cache.hpp)
        AttentionRecord rec;
        const Tensor z = attention(Backend::Reference, q, K, V, Mask::none(), aopt,
                                   attentions != nullptr ? &rec : nullptr, 1);  // (B, H, 1, Dv)
        if (attentions != nullptr) attentions->push_back(std::move(rec.weights));
        add_into(x, mha.o_proj.forward(merge_heads(z)));  // (B, 1, D)
        if (post) x = layer_norm(x, L.ln1_gamma, L.ln1_beta, c.eps);
        if (c.mlp) {
            const Tensor h2 = pre ? layer_norm(x, L.ln2_gamma, L.ln2_beta, c.eps) : x;
            add_into(x, mlp(L, h2, c.act, nullptr, nullptr));
            if (post) x = layer_norm(x, L.ln2_gamma, L.ln2_beta, c.eps);
        }
        if (trace != nullptr) {
            const std::string n = std::to_string(l);
            const char* in = pre ? "LN_1(x_t)" : "x_t";
            emit("q" + n, fmt::format("{}·W_qᵀ + b_q, split", in), q);
            emit("K" + n, fmt::format("cache ++ ({}·W_kᵀ + b_k)", in), K);
            emit("V" + n, fmt::format("cache ++ ({}·W_vᵀ + b_v)", in), V);
            emit("attn" + n, "softmax(q·Kᵀ·scale)·V, no mask", z);
            emit("out" + n, pre ? "h + MLP(LN_2(h)), h = x_t + merge(attn)·W_oᵀ"
                            : post ? "LN_2(h + MLP(h)), h = LN_1(x_t + merge(attn)·W_oᵀ)"
                                   : "h + FFN(h), h = x_t + merge(attn)·W_oᵀ",
                 x);
        }
        if (layer_out != nullptr) layer_out->push_back(x);
    }
    if (pre) x = layer_norm(x, lnf_gamma, lnf_beta, c.eps);
    return x;
}

}  // namespace attn
