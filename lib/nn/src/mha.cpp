// Multi-head attention, batch_first (see attn/nn/mha.hpp for every shape).
#include "attn/nn/mha.hpp"

#include <tuple>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

MhaConfig MhaConfig::resolved() const {
    MhaConfig c = *this;
    if (c.d_model <= 0) throw InputError(fmt::format("d_model must be positive, got {}", c.d_model));
    if (c.heads <= 0) throw InputError(fmt::format("heads must be positive, got {}", c.heads));
    if (c.d_k < 0) throw InputError(fmt::format("d_k must be positive (or 0: d_model / heads), got {}", c.d_k));
    if (c.d_v < 0) throw InputError(fmt::format("d_v must be positive (or 0: d_k), got {}", c.d_v));
    if (c.d_k == 0) {
        if (c.d_model % c.heads != 0)
            throw InputError(fmt::format("d_model {} is not divisible by {} heads; pick H dividing D or give Dk",
                                         c.d_model, c.heads));
        c.d_k = c.d_model / c.heads;
    }
    if (c.d_v == 0) c.d_v = c.d_k;
    if (c.kv_heads < 0) throw InputError(fmt::format("kv_heads must be positive (or 0: heads), got {}", c.kv_heads));
    if (c.kv_heads == 0) c.kv_heads = c.heads;
    if (c.heads % c.kv_heads != 0)
        throw InputError(fmt::format("{} kv heads do not divide {} query heads; grouped-query attention needs "
                                     "heads = g·kv_heads",
                                     c.kv_heads, c.heads));
    if (c.kdim < 0) throw InputError(fmt::format("kdim must be positive (or 0: d_model), got {}", c.kdim));
    if (c.vdim < 0) throw InputError(fmt::format("vdim must be positive (or 0: d_model), got {}", c.vdim));
    if (c.kdim == 0) c.kdim = c.d_model;
    if (c.vdim == 0) c.vdim = c.d_model;
    return c;
}

Tensor split_heads(const Tensor& x, int64_t H) {
    // (B, T, H*d) -> view (B, T, H, d) -> transpose(1, 2) -> (B, H, T, d)
    if (x.rank() != 3 || H <= 0 || x.dim(2) % H != 0)
        throw ShapeError(fmt::format("split_heads: {} cannot split into {} heads", shape_str(x.shape), H));
    const int64_t B = x.dim(0), T = x.dim(1), d = x.dim(2) / H;
    Tensor y(Shape{B, H, T, d});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h) {
                const float* src = x.ptr() + ((b * T + t) * H + h) * d;
                std::copy(src, src + d, y.ptr() + ((b * H + h) * T + t) * d);
            }
    return y;
}

Tensor merge_heads(const Tensor& x) {
    // (B, H, T, d) -> transpose(1, 2) -> (B, T, H, d) -> reshape (B, T, H*d)
    if (x.rank() != 4) throw ShapeError(fmt::format("merge_heads wants (B, H, T, d), got {}", shape_str(x.shape)));
    const int64_t B = x.dim(0), H = x.dim(1), T = x.dim(2), d = x.dim(3);
    Tensor y(Shape{B, T, H * d});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t) {
                const float* src = x.ptr() + ((b * H + h) * T + t) * d;
                std::copy(src, src + d, y.ptr() + ((b * T + t) * H + h) * d);
            }
    return y;
}

Tensor merge_heads_wrong(const Tensor& x) {
    // (B, H, T, d) -> reshape (B, T, H*d) straight away: rows of different heads get glued together.
    if (x.rank() != 4)
        throw ShapeError(fmt::format("merge_heads_wrong wants (B, H, T, d), got {}", shape_str(x.shape)));
    return x.reshaped(Shape{x.dim(0), x.dim(2), x.dim(1) * x.dim(3)});
}

MultiHeadAttention::MultiHeadAttention(const MhaConfig& cfg) : cfg_(cfg.resolved()) {
    const int64_t D = cfg_.d_model, H = cfg_.heads, Hkv = cfg_.kv_heads;
    q_proj = Linear(D, H * cfg_.d_k, cfg_.bias);
    k_proj = Linear(cfg_.kdim, Hkv * cfg_.d_k, cfg_.bias);
    v_proj = Linear(cfg_.vdim, Hkv * cfg_.d_v, cfg_.bias);
    o_proj = Linear(H * cfg_.d_v, D, cfg_.bias);
}

void MultiHeadAttention::init(const InitSpec& spec, Rng& rng) {
    q_proj.init(spec, rng);
    k_proj.init(spec, rng);
    v_proj.init(spec, rng);
    o_proj.init(spec, rng);
}

Tensor MultiHeadAttention::forward(const Tensor& x, const Mask& mask, const AttentionOptions& opt, ForwardRecord* rec,
                                   const TraceFn* trace, Backend backend, int threads) const {
    Tensor out = forward(x, x, x, mask, opt, rec, trace, backend, threads);
    if (rec != nullptr) rec->self_attention = true;
    return out;
}

Tensor MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value, const Mask& mask,
                                   const AttentionOptions& opt, ForwardRecord* rec, const TraceFn* trace,
                                   Backend backend, int threads) const {
    // query (B, Tq, D), key (B, Tk, kdim), value (B, Tk, vdim) -> out (B, Tq, D)
    const int64_t H = cfg_.heads, Hkv = cfg_.kv_heads;
    for (const auto& [t, what, width] : {std::tuple{&query, "query", cfg_.d_model}, {&key, "key", cfg_.kdim},
                                         {&value, "value", cfg_.vdim}})
        if (t->rank() != 3 || t->dim(2) != width)
            throw ShapeError(fmt::format("multi-head attention wants the {} input (B, T, {}), got {}", what, width,
                                         shape_str(t->shape)));
    if (key.dim(0) != query.dim(0) || value.dim(0) != query.dim(0) || key.dim(1) != value.dim(1))
        throw ShapeError(fmt::format("query {}, key {}, value {} disagree on batch or key length",
                                     shape_str(query.shape), shape_str(key.shape), shape_str(value.shape)));
    auto emit = [&](const char* name, const char* formula, const Tensor& t) {
        if (trace != nullptr && *trace) (*trace)(TraceEvent{name, formula, t.shape, &t});
    };
    // cross-attention: keys (and values) from another sequence, x_kv (and x_v)
    const bool cross = &key != &query, own_v = &value != &key;
    emit("x", "input", query);
    if (cross) emit("x_kv", "key/value input (another sequence)", key);
    if (own_v) emit("x_v", "value input", value);
    const Tensor Qf = q_proj.forward(query);                 // (B, Tq, H*Dk)
    emit("Q", "x·W_qᵀ + b_q", Qf);
    const Tensor Kf = k_proj.forward(key);                   // (B, Tk, H_kv*Dk)
    emit("K", cross ? "x_kv·W_kᵀ + b_k" : "x·W_kᵀ + b_k", Kf);
    const Tensor Vf = v_proj.forward(value);                 // (B, Tk, H_kv*Dv)
    emit("V", own_v ? "x_v·W_vᵀ + b_v" : cross ? "x_kv·W_vᵀ + b_v" : "x·W_vᵀ + b_v", Vf);
    Tensor Q = split_heads(Qf, H);                           // (B, H, Tq, Dk)
    emit("Q_heads", "Q.view(B, T, H, Dk).transpose(1, 2)", Q);
    const bool grouped = Hkv != H;
    Tensor K = split_heads(Kf, Hkv);                         // (B, H_kv, Tk, Dk)
    emit("K_heads", grouped ? "K.view(B, T, H_kv, Dk).transpose(1, 2)" : "K.view(B, T, H, Dk).transpose(1, 2)", K);
    Tensor V = split_heads(Vf, Hkv);                         // (B, H_kv, Tk, Dv)
    emit("V_heads", grouped ? "V.view(B, T, H_kv, Dv).transpose(1, 2)" : "V.view(B, T, H, Dv).transpose(1, 2)", V);

    // (B, H, Tq, Dv); a recording backend also hands back every (B, H, Tq, Tk) step
    AttentionRecord arec;
    const bool want_rec = backend_info(backend).records && (rec != nullptr || trace != nullptr);
    Tensor head_out = attention(backend, Q, K, V, mask, opt, want_rec ? &arec : nullptr, threads);
    if (want_rec) {
        emit("scores", opt.rope ? "RoPE(Q)·RoPE(K)ᵀ" : grouped ? "Q·Kᵀ, head h reads kv head h/(H/H_kv)" : "Q·Kᵀ",
             arec.scores_raw);
        std::string scaled = "scores · scale";
        if (opt.softcap > 0.0f) scaled = fmt::format("{0}·tanh(scores · scale / {0})", opt.softcap);
        if (opt.alibi) scaled += " − m_h·|i − j|";
        emit("scaled", (scaled + " (+ additive mask)").c_str(), arec.scores_scaled);
        emit("masked", "masked_fill(~mask, fill)", arec.scores_masked);
        emit("weights", "softmax(masked, dim=-1)", arec.weights);
        if (opt.train && opt.dropout > 0) emit("dropped", "dropout(weights, p) / (1 - p)", arec.weights_dropped);
    }
    emit("head_out", "weights·V", head_out);
    Tensor merged = merge_heads(head_out);                   // (B, Tq, H*Dv)
    emit("merged", "head_out.transpose(1, 2).reshape(B, T, H·Dv)", merged);
    Tensor out = o_proj.forward(merged);                     // (B, Tq, D)
    emit("out", "merged·W_oᵀ + b_o", out);
    if (rec != nullptr) {
        rec->x = query;
        rec->key = key;
        rec->value = value;
        rec->self_attention = false;
        rec->Q = std::move(Q);
        rec->K = std::move(K);
        rec->V = std::move(V);
        rec->attn = std::move(arec);
        rec->head_out = std::move(head_out);
        rec->merged = std::move(merged);
        rec->out = out;
    }
    return out;
}

MhaGrads MultiHeadAttention::backward(const ForwardRecord& fwd, const Tensor& dout, const Mask& mask,
                                      const AttentionOptions& opt, MhaBackwardRecord* rec, const TraceFn* trace,
                                      Backend backend, int threads) const {
    // dout (B, Tq, D) -> every gradient; the forward's record holds the inputs and Q, K, V
    const int64_t H = cfg_.heads;
    if (fwd.out.empty() || fwd.Q.empty() || fwd.merged.empty())
        throw InputError("multi-head attention backward needs the forward pass's record (ForwardRecord)");
    if (dout.shape != fwd.out.shape)
        throw ShapeError(fmt::format("the output gradient dout must have the output's shape {} (B, Tq, D), got {}",
                                     shape_str(fwd.out.shape), shape_str(dout.shape)));
    const Tensor& key = fwd.key.empty() ? fwd.x : fwd.key;
    const Tensor& value = fwd.value.empty() ? fwd.x : fwd.value;
    auto emit = [&](const char* name, const char* formula, const Tensor& t) {
        if (trace != nullptr && *trace) (*trace)(TraceEvent{name, formula, t.shape, &t});
    };
    MhaGrads g;
    emit("dout", "dL/d out (given)", dout);
    // output projection: out = merged·W_oᵀ + b_o
    Linear::Grads go = o_proj.backward(fwd.merged, dout);
    g.dW_o = std::move(go.dW);
    g.db_o = std::move(go.db);
    Tensor d_merged = std::move(go.dx);                                     // (B, Tq, H*Dv)
    emit("d_merged", "dout·W_o", d_merged);
    emit("dW_o", "doutᵀ·merged", g.dW_o);
    if (!g.db_o.empty()) emit("db_o", "Σ_(b,t) dout", g.db_o);
    Tensor d_head_out = merge_heads_backward(d_merged, H);                  // (B, H, Tq, Dv)
    emit("d_head_out", "d_merged.view(B, T, H, Dv).transpose(1, 2)", d_head_out);

    // attention, per head
    AttentionBackwardRecord arec;
    const bool want_rec = backend_info(backend).backward_records && (rec != nullptr || trace != nullptr);
    AttentionGrads ag = attention_backward(backend, fwd.Q, fwd.K, fwd.V, mask, opt, d_head_out,
                                           want_rec ? &arec : nullptr, threads);
    const bool grouped = cfg_.kv_heads != H;  // kv head g sums the gradients of its query heads
    emit("dV_heads", grouped ? "Σ_group Pdᵀ·d_head_out" : "Pdᵀ·d_head_out", ag.dv);
    if (want_rec) {
        if (opt.train && opt.dropout > 0) {
            emit("d_dropped", "d_head_out·Vᵀ", arec.d_weights_dropped);
            emit("d_weights", "d_dropped ∘ keep / (1 - p)", arec.d_weights);
        } else {
            emit("d_weights", "d_head_out·Vᵀ", arec.d_weights);
        }
        emit("d_scores", "P ∘ (d_weights − rowsum(P ∘ d_weights)), 0 where masked", arec.d_scores);
    }
    const bool cosine = opt.scale.kind == ScaleKind::Cosine;
    emit("dQ_heads", cosine ? "through q̂ = q/|q|: d_scores·K̂/τ, then (dq̂ − q̂(q̂·dq̂))/|q|" : "d_scores·K·scale",
         ag.dq);
    emit("dK_heads",
         cosine ? "through k̂ = k/|k|: d_scoresᵀ·Q̂/τ, then (dk̂ − k̂(k̂·dk̂))/|k|"
                : (grouped ? "Σ_group d_scoresᵀ·Q·scale" : "d_scoresᵀ·Q·scale"),
         ag.dk);

    // input projections: Q = query·W_qᵀ + b_q, and K, V likewise
    const Tensor dQf = split_heads_backward(ag.dq);                         // (B, Tq, H*Dk)
    emit("dQ", "dQ_heads.transpose(1, 2).reshape(B, T, H·Dk)", dQf);
    const Tensor dKf = split_heads_backward(ag.dk);                         // (B, Tk, H*Dk)
    emit("dK", "dK_heads.transpose(1, 2).reshape(B, T, H·Dk)", dKf);
    const Tensor dVf = split_heads_backward(ag.dv);                         // (B, Tk, H*Dv)
    emit("dV", "dV_heads.transpose(1, 2).reshape(B, T, H·Dv)", dVf);
    Linear::Grads gq = q_proj.backward(fwd.x, dQf);
    Linear::Grads gk = k_proj.backward(key, dKf);
    Linear::Grads gv = v_proj.backward(value, dVf);
    g.dquery = std::move(gq.dx);
    g.dkey = std::move(gk.dx);
    g.dvalue = std::move(gv.dx);
    g.dW_q = std::move(gq.dW);
    g.db_q = std::move(gq.db);
    g.dW_k = std::move(gk.dW);
    g.db_k = std::move(gk.db);
    g.dW_v = std::move(gv.dW);
    g.db_v = std::move(gv.db);
    emit("dW_q", "dQᵀ·x", g.dW_q);
    if (!g.db_q.empty()) emit("db_q", "Σ_(b,t) dQ", g.db_q);
    emit("dW_k", "dKᵀ·x", g.dW_k);
    if (!g.db_k.empty()) emit("db_k", "Σ_(b,t) dK", g.db_k);
    emit("dW_v", "dVᵀ·x", g.dW_v);
    if (!g.db_v.empty()) emit("db_v", "Σ_(b,t) dV", g.db_v);
    if (fwd.self_attention) {
        // x fed all three projections: its gradient is the sum of the three paths
        g.dx = g.dquery;
        for (size_t i = 0; i < g.dx.data.size(); ++i) g.dx.data[i] += g.dkey.data[i] + g.dvalue.data[i];
        emit("dx", "dQ·W_q + dK·W_k + dV·W_v", g.dx);
    } else {
        emit("dquery", "dQ·W_q", g.dquery);
        emit("dkey", "dK·W_k", g.dkey);
        emit("dvalue", "dV·W_v", g.dvalue);
    }
    if (rec != nullptr) {
        rec->d_out = dout;
        rec->d_merged = std::move(d_merged);
        rec->d_head_out = std::move(d_head_out);
        rec->attn = std::move(arec);
        rec->dQ = std::move(ag.dq);
        rec->dK = std::move(ag.dk);
        rec->dV = std::move(ag.dv);
    }
    return g;
}

}  // namespace attn
