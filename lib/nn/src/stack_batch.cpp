// stack_batch.cpp: the Transformer stack's fast path over a padded batch (see
// attn/nn/stack.hpp): the weights prepared once, the projections as packed GEMMs, the
// flash kernel, the per-token work optionally over the real tokens only.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "attn/core/attention.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/nn/fast_ops.hpp"
#include "attn/nn/stack.hpp"

namespace attn {

namespace {

// (out, in) row-major -> (in, out) row-major, written at column offset `col` of a (in, ld) matrix.
void transpose_into(const Tensor& W, float* dst, int64_t ld, int64_t col) {
    const int64_t out = W.dim(0), in = W.dim(1);
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) dst[i * ld + col + o] = W.data[static_cast<size_t>(o * in + i)];
}

Tensor transposed(const Tensor& W) {
    Tensor t({W.dim(1), W.dim(0)});
    transpose_into(W, t.ptr(), W.dim(0), 0);
    return t;
}

}  // namespace

void TransformerStack::prepare() {
    const bool bf16 = bf16_prepared();  // rebuilt below from the new copies
    const int64_t D = config.d_model, QK = config.heads * config.d_k, VV = config.heads * config.d_v;
    const int64_t W = 2 * QK + VV;
    prepared.assign(layers.size(), PreparedLayer{});
    for (size_t l = 0; l < layers.size(); ++l) {
        const StackLayer& L = layers[l];
        PreparedLayer& P = prepared[l];
        const MultiHeadAttention& a = L.attention;
        P.qkv_t = Tensor({D, W});
        transpose_into(a.q_proj.W, P.qkv_t.ptr(), W, 0);
        transpose_into(a.k_proj.W, P.qkv_t.ptr(), W, QK);
        transpose_into(a.v_proj.W, P.qkv_t.ptr(), W, 2 * QK);
        P.qkv_b = Tensor({W});
        std::copy(a.q_proj.b.data.begin(), a.q_proj.b.data.end(), P.qkv_b.data.begin());
        std::copy(a.k_proj.b.data.begin(), a.k_proj.b.data.end(), P.qkv_b.data.begin() + QK);
        std::copy(a.v_proj.b.data.begin(), a.v_proj.b.data.end(), P.qkv_b.data.begin() + 2 * QK);
        P.o_t = transposed(a.o_proj.W);
        // packed for every family's kernel (the generic one runs anywhere: --gemm generic on a
        // CPU where Best is Eigen must run it, not Eigen under its name)
        P.qkv_p = PackedWeight::pack(P.qkv_t);
        P.o_p = PackedWeight::pack(P.o_t);
        if (config.mlp) {
            P.fc_t = transposed(L.fc.W);
            P.proj_t = transposed(L.proj.W);
            P.fc_p = PackedWeight::pack(P.fc_t);
            P.proj_p = PackedWeight::pack(P.proj_t);
        }
    }
    if (bf16) prepare_bf16();
}

void TransformerStack::prepare_bf16() {
    for (PreparedLayer& P : prepared) {
        P.qkv_h = PackedWeightBf16::pack(P.qkv_t);
        P.o_h = PackedWeightBf16::pack(P.o_t);
        if (!config.mlp) continue;
        P.fc_h = PackedWeightBf16::pack(P.fc_t);
        P.proj_h = PackedWeightBf16::pack(P.proj_t);
    }
}

bool TransformerStack::bf16_prepared() const { return !prepared.empty() && !prepared.front().qkv_h.pairs.empty(); }

Backend TransformerStack::batch_backend(const BatchOptions& opt) {
    if (opt.record_attention || opt.attention == BatchAttention::Reference) return Backend::Reference;
    return Backend::Flash;
}

namespace {

// Which rows of x each sentence owns: sentence b owns rows [first[b], first[b] + rows[b]).
// Normally all T positions (first[b] = b T); with skip_padding only its real tokens, packed.
struct RowPlan {
    std::vector<int64_t> rows, first;
    int64_t N = 0;
};

RowPlan plan_rows(const std::vector<int64_t>& lengths, int64_t T, bool unpad) {
    RowPlan p;
    const size_t B = lengths.size();
    p.rows.resize(B);
    p.first.assign(B + 1, 0);
    for (size_t b = 0; b < B; ++b) {
        p.rows[b] = unpad ? lengths[b] : T;
        p.first[b + 1] = p.first[b] + p.rows[b];
    }
    p.N = p.first.back();
    return p;
}

// The batch's lengths and padded length T; InputError on an empty batch or row, a bad id, a row
// longer than the position table.
int64_t check_batch(const std::vector<std::vector<int32_t>>& ids, const StackConfig& c, int32_t pad_id,
                    const std::string& vocab_name, std::vector<int64_t>& lengths) {
    if (ids.empty()) throw InputError("the batch is empty");
    int64_t T = 0;
    for (const auto& s : ids) {
        if (s.empty()) throw InputError("a sentence has no tokens");
        if (static_cast<int64_t>(s.size()) > c.positions)
            throw InputError(fmt::format("a sentence has {} tokens, more than the {} positions the model has", s.size(),
                                         c.positions));
        for (int32_t id : s)
            if (id < 0 || id >= c.vocab)
                throw InputError(fmt::format("{}: token id {} is outside the vocabulary [0, {}) of the model",
                                             vocab_name, id, c.vocab));
        lengths.push_back(static_cast<int64_t>(s.size()));
        T = std::max<int64_t>(T, static_cast<int64_t>(s.size()));
    }
    if (pad_id < 0 || pad_id >= c.vocab)
        throw InputError(fmt::format("{}: pad id {} is outside the vocabulary [0, {})", vocab_name, pad_id, c.vocab));
    return T;
}

// Pass 1 of forward_batch: each real row's token (+ position, + type 0) embedding into x (N, D),
// and post-norm's embedding LayerNorm in place (ln_mean, ln_rstd: what its backward would read).
void embed_rows(const TransformerStack& s, const std::vector<std::vector<int32_t>>& ids, const RowPlan& rp,
                int32_t pad_id, int th, Tensor& x, std::vector<float>& ln_mean, std::vector<float>& ln_rstd) {
    const StackConfig& c = s.config;
    const int64_t B = static_cast<int64_t>(ids.size()), D = c.d_model;
    const bool post = c.norm == NormPlace::Post;
    const std::vector<int64_t>& rows = rp.rows;
    const std::vector<int64_t>& first = rp.first;
    parallel_for(B, th, [&](int64_t b, int) {
        const auto& ids_b = ids[static_cast<size_t>(b)];
        const int64_t len = static_cast<int64_t>(ids_b.size()), r0 = first[static_cast<size_t>(b)];
        for (int64_t t = 0; t < rows[static_cast<size_t>(b)]; ++t) {
            const int32_t id = t < len ? ids_b[static_cast<size_t>(t)] : pad_id;
            const float* we = s.tok_emb.ptr() + static_cast<int64_t>(id) * D;
            const float* pe = s.pos_emb.ptr() + t * D;
            float* xr = x.ptr() + (r0 + t) * D;
            if (c.token_types > 0) {
                const float* te = s.type_emb.ptr();  // token type 0 for a single sentence
                for (int64_t d = 0; d < D; ++d) xr[d] = we[d] + pe[d] + te[d];
            } else {
                for (int64_t d = 0; d < D; ++d) xr[d] = we[d] + pe[d];
            }
        }
        float* xb = x.ptr() + r0 * D;
        if (post)
            nn::layernorm_forward_fast(xb, ln_mean.data() + r0, ln_rstd.data() + r0, xb, s.emb_ln_gamma.ptr(),
                                       s.emb_ln_beta.ptr(), rows[static_cast<size_t>(b)], D, 1, c.eps);
    });
}

// The fused projection's rows (N, 2 QK + VV) split into heads: Q, K (B, H, T, Dk) and V (B, H, T, Dv);
// padded positions without a row of their own keep their zeros.
void split_heads(const Tensor& qkv, const RowPlan& rp, int th, Tensor& Q, Tensor& K, Tensor& V) {
    const int64_t B = Q.dim(0), H = Q.dim(1), T = Q.dim(2), Dk = Q.dim(3), Dv = V.dim(3);
    const int64_t QK = H * Dk, VV = H * Dv;
    parallel_for(B * H, th, [&](int64_t bh, int) {
        const int64_t b = bh / H, hh = bh % H;
        for (int64_t t = 0; t < rp.rows[static_cast<size_t>(b)]; ++t) {
            const float* src = qkv.ptr() + (rp.first[static_cast<size_t>(b)] + t) * (2 * QK + VV);
            std::copy_n(src + hh * Dk, Dk, Q.ptr() + ((b * H + hh) * T + t) * Dk);
            std::copy_n(src + QK + hh * Dk, Dk, K.ptr() + ((b * H + hh) * T + t) * Dk);
            std::copy_n(src + 2 * QK + hh * Dv, Dv, V.ptr() + ((b * H + hh) * T + t) * Dv);
        }
    });
}

// The heads (B, H, T, Dv) merged back into rows: merged (N, H Dv).
void merge_heads(const Tensor& heads, const RowPlan& rp, int th, Tensor& merged) {
    const int64_t B = heads.dim(0), H = heads.dim(1), T = heads.dim(2), Dv = heads.dim(3), VV = H * Dv;
    parallel_for(B * H, th, [&](int64_t bh, int) {
        const int64_t b = bh / H, hh = bh % H;
        for (int64_t t = 0; t < rp.rows[static_cast<size_t>(b)]; ++t) {
            const float* src = heads.ptr() + ((b * H + hh) * T + t) * Dv;
            std::copy(src, src + Dv, merged.ptr() + (rp.first[static_cast<size_t>(b)] + t) * VV + hh * Dv);
        }
    });
}

// The hidden states (B, T, D) from the rows x (N, D): x itself when every padded row was computed,
// else the real rows back in place with padded positions zero.
Tensor hidden_in_place(Tensor x, const RowPlan& rp, bool unpad, int64_t B, int64_t T) {
    const int64_t D = x.dim(1);
    if (!unpad) {
        x.shape = {B, T, D};  // (N, D) is (B, T, D) here: N = B T
        return x;
    }
    Tensor out({B, T, D});
    for (int64_t b = 0; b < B; ++b)
        std::copy(x.ptr() + rp.first[static_cast<size_t>(b)] * D, x.ptr() + rp.first[static_cast<size_t>(b) + 1] * D,
                  out.ptr() + b * T * D);
    return out;
}

}  // namespace

BatchOutput TransformerStack::forward_batch(const std::vector<std::vector<int32_t>>& ids, const BatchOptions& opt,
                                            int32_t pad_id, const std::string& vocab_name) const {
    // ids: B lists, padded to T; out hidden (B, T, D), attentions L x (B, H, T, T)
    const StackConfig& c = config;
    const int64_t B = static_cast<int64_t>(ids.size()), D = c.d_model, H = c.heads, F = c.d_ff;
    const int64_t Dk = c.d_k, Dv = c.d_v, QK = H * Dk, VV = H * Dv;
    const bool pre = c.norm == NormPlace::Pre, post = c.norm == NormPlace::Post;
    BatchOutput out;
    if (c.vocab == 0) throw InputError("this stack has no vocabulary: a batch of ids needs token embeddings");
    const int64_t T = check_batch(ids, c, pad_id, vocab_name, out.lengths);
    if (opt.bf16_weights && !bf16_prepared())
        throw InputError("bf16 weights were asked for but not made (call prepare_bf16() first)");
    if (prepared.size() != layers.size()) throw std::logic_error("TransformerStack::forward_batch before prepare()");
    out.mask = opt.key_padding_mask ? Mask::key_padding(out.lengths) : Mask::none();
    if (c.causal) out.mask = out.mask.is_none() ? Mask::make_causal() : out.mask.combined(Mask::make_causal());
    const AttentionOptions aopt = c.attention_options();
    const bool unpad = opt.skip_padding && opt.key_padding_mask && !opt.record_attention && !opt.record_qkv;
    const RowPlan rp = plan_rows(out.lengths, T, unpad);
    const int64_t N = rp.N;
    // Threads: at most one per 32 rows. Below that a second thread's wake-up and the split
    // cost more than they save (MiniLM, one sentence of 16 tokens: 3.3 ms on 1 thread, 5.4 ms
    // on 2). Every result is the same for any thread count, so this only changes the time.
    const int th = static_cast<int>(std::clamp<int64_t>(N / 32, 1, resolve_threads(opt.threads)));

    // pass 1: embeddings (and post-norm's LayerNorm)                  x (N, D)
    // (the LayerNorm of lib/nn in place; ln_mean and ln_rstd hold what its backward would read)
    Tensor x({N, D});
    std::vector<float> ln_mean(static_cast<size_t>(N)), ln_rstd(static_cast<size_t>(N));
    embed_rows(*this, ids, rp, pad_id, th, x, ln_mean, ln_rstd);

    // pass 2: the layers. Element-wise work runs over fixed pieces of rows (each row computed
    // the same way whatever the thread count); the attention of the (b, h) pairs and query
    // blocks is spread over the threads by the kernel. The attention itself always runs on
    // the padded (B, H, T, Dk) layout; without rows of their own, padded positions keep zero
    // q, k and v (masked keys add exactly nothing).
    const Backend impl = batch_backend(opt);
    out.attention_path = backend_name(impl);
    Tensor qkv({N, 2 * QK + VV}), Q({B, H, T, Dk}), K({B, H, T, Dk}), V({B, H, T, Dv}), a({N, D}), merged({N, VV});
    Tensor h(c.mlp ? Shape{N, F} : Shape{0}), xn(pre ? Shape{N, D} : Shape{0});
    constexpr int64_t kRows = 16;  // rows per piece of the element-wise passes
    const int64_t pieces = (N + kRows - 1) / kRows;
    // post-norm: x = LN(x + a); pre-norm and no norm: x += a; pre-norm's LN into xn (x unchanged)
    auto add_norm = [&](const Tensor* add, const Tensor* gamma, const Tensor* beta, float* dst) {
        parallel_for(pieces, th, [&](int64_t p, int) {
            const int64_t r0 = p * kRows, r1 = std::min(N, r0 + kRows);
            float* xr = x.ptr() + r0 * D;
            if (add != nullptr) {
                const float* ar = add->ptr() + r0 * D;
                for (int64_t k = 0; k < (r1 - r0) * D; ++k) xr[k] += ar[k];
            }
            if (gamma != nullptr)
                nn::layernorm_forward_fast(dst + r0 * D, ln_mean.data() + r0, ln_rstd.data() + r0, xr, gamma->ptr(),
                                           beta->ptr(), r1 - r0, D, 1, c.eps);
        });
    };
    // one projection: the bf16 GEMM when asked for, else the packed GEMM of gemm_path, else
    // (gemm_path "eigen") Eigen's
    out.gemm_path = gemm_kernel_name(opt.gemm, opt.bf16_weights, opt.amx,
                                     "forward_batch");  // InputError for a forced kernel this CPU lacks
    const bool packed = !opt.bf16_weights && out.gemm_path != "eigen";
    std::vector<uint16_t> xb;  // the bf16 GEMM's input, kept from one projection to the next
    auto linear = [&](float* y, const float* in, const Tensor& Wt, const PackedWeight& Wp, const PackedWeightBf16& Wh,
                      const float* bias, MlpActivation act) {
        if (opt.bf16_weights) {
            gemm_bf16(y, in, Wh, bias, N, th, act, opt.amx, &xb);
            return;
        }
        if (!packed) return gemm_wt(y, in, Wt.ptr(), bias, N, Wt.dim(0), Wt.dim(1), th, act);
        // the kernel named in gemm_path runs, or nothing does (never Eigen under its name)
        if (!gemm_packed(y, in, Wp, bias, N, th, act, opt.gemm))
            throw std::logic_error("the " + out.gemm_path + " GEMM did not run (its packed weights are missing)");
    };
    for (int64_t l = 0; l < c.layers; ++l) {
        const StackLayer& L = layers[static_cast<size_t>(l)];
        const PreparedLayer& P = prepared[static_cast<size_t>(l)];
        // pre-norm: the attention reads LN_1(x)
        if (pre) add_norm(nullptr, &L.ln1_gamma, &L.ln1_beta, xn.ptr());
        const float* in = pre ? xn.ptr() : x.ptr();
        // Q, K, V in one GEMM: (N, D) . (D, 2 QK + VV), then split into heads   (B, H, T, Dk or Dv)
        linear(qkv.ptr(), in, P.qkv_t, P.qkv_p, P.qkv_h, P.qkv_b.ptr(), MlpActivation::None);
        split_heads(qkv, rp, th, Q, K, V);
        if (opt.record_qkv) {
            out.queries.push_back(Q);
            out.keys.push_back(K);
            out.values.push_back(V);
        }
        AttentionRecord rec;
        const Tensor heads = attention(impl, Q, K, V, out.mask, aopt, opt.record_attention ? &rec : nullptr, th);
        if (opt.record_attention) out.attentions.push_back(std::move(rec.weights));  // (B, H, T, T)
        // merge the heads back: (B, H, T, Dv) -> (N, H Dv)
        merge_heads(heads, rp, th, merged);
        linear(a.ptr(), merged.ptr(), P.o_t, P.o_p, P.o_h, L.attention.o_proj.b.ptr(), MlpActivation::None);
        if (post) add_norm(&a, &L.ln1_gamma, &L.ln1_beta, x.ptr());  // x = LN_1(x + a)
        if (!c.mlp) {
            if (!post) add_norm(&a, nullptr, nullptr, nullptr);  // x += a
            continue;
        }
        // pre-norm: x += a, then the MLP reads LN_2(x). h = act(in W1^T + b1) (N, F); f = h W2^T + b2 (N, D)
        if (pre) add_norm(&a, &L.ln2_gamma, &L.ln2_beta, xn.ptr());
        if (c.norm == NormPlace::None) add_norm(&a, nullptr, nullptr, nullptr);  // x += a
        linear(h.ptr(), pre ? xn.ptr() : x.ptr(), P.fc_t, P.fc_p, P.fc_h, L.fc.b.ptr(), c.act);
        linear(a.ptr(), h.ptr(), P.proj_t, P.proj_p, P.proj_h, L.proj.b.ptr(), MlpActivation::None);
        if (post) add_norm(&a, &L.ln2_gamma, &L.ln2_beta, x.ptr());  // x = LN_2(x + f)
        else add_norm(&a, nullptr, nullptr, nullptr);                 // x += f
    }
    if (pre) add_norm(nullptr, &lnf_gamma, &lnf_beta, x.ptr());  // LN_f in place

    out.hidden = hidden_in_place(std::move(x), rp, unpad, B, T);
    return out;
}

}  // namespace attn
