// The stack's training engine (attn/nn/trainable_stack.hpp), written once over the scalar type: the
// activations a pass saves and one engine that runs the forward and backward passes over the
// parameters' pointers (params() order: the stack's tensors, trainable_stack.cpp) through either
// the reference ops (ops.hpp) or their fast twins (fast_ops.hpp). stack_train.cpp runs it in float
// (TrainableStack); lib/nn/f64/stack_train_f64.cpp in double (loss_and_grads_f64, the tests'
// finite-difference checks, in attn_nn_f64, which the library does not ship).
#pragma once

#include "attn/nn/trainable_stack.hpp"

#include <fmt/format.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "attn/cpu/training_attention.hpp"
#include "attn/cpu/variant_attention.hpp"
#include "attn/nn/fast_ops.hpp"
#include "attn/nn/ops.hpp"
#include "stack_train.hpp"

namespace attn {

using namespace stack_train;  // the parameter offsets (kPerBlock, kQW, ...) and param_specs

namespace {

// Large buffers (the activations a step saves, 46 MB at the bench size) on 2 MiB
// pages where Linux lends them (transparent huge pages in "madvise" mode, Debian's
// default): a step walks through them once forward and once back, and with 4 KiB pages
// the TLB misses stalled the loads of the backward pass. Smaller buffers, and other
// systems, take operator new as std::vector would.
template <class T>
struct PageAlloc {
    using value_type = T;
    static constexpr size_t kHuge = size_t{2} << 20;
    PageAlloc() = default;
    template <class U>
    PageAlloc(const PageAlloc<U>&) noexcept {}
    T* allocate(size_t n) {
        const size_t bytes = n * sizeof(T);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (bytes >= kHuge / 2) {
            const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
            void* p = std::aligned_alloc(kHuge, rounded);
            if (!p) throw std::bad_alloc();
            madvise(p, rounded, MADV_HUGEPAGE);  // advice only: ignored where THP is off
            return static_cast<T*>(p);
        }
#endif
        return static_cast<T*>(::operator new(bytes));
    }
    void deallocate(T* p, size_t n) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (n * sizeof(T) >= kHuge / 2) return std::free(p);
#endif
        ::operator delete(p);
    }
    friend bool operator==(const PageAlloc&, const PageAlloc&) { return true; }
    friend bool operator!=(const PageAlloc&, const PageAlloc&) { return false; }
};

template <class S>
using Buf = std::vector<S, PageAlloc<S>>;
using nn::Into;

// Every activation of one forward pass that the backward pass reads, for (B, T), and the
// whole batch's backward scratch. Each path gets only the buffers it uses: the fast (fused)
// path reads q|k|v from one buffer and keeps its projections and backward scratch per thread
// (run_model); the reference, cosine and masked paths take the whole batch at once.
template <class S>
struct Acts {
    int64_t B = -1, T = -1;
    bool fused = false;
    // sinusoidal table (Tmax, D) when pos = Sinusoidal, zeros when None: the stack's pos_emb, made
    // again here in S (the double reference needs it in double)
    Buf<S> pos;
    struct Layer {
        Buf<S> ln1, ln1_mean, ln1_rstd, q, k, v, qn, kn, qnorm, knorm, att, atty, attproj, mid;
        Buf<S> ln2, ln2_mean, ln2_rstd, fch, fch_act, fcproj;
        Buf<S> qkv, wqkv, bqkv;  // fast path: q|k|v in one (N, 2*H*Dk + H*Dv) buffer, from one GEMM
        Buf<S> wqkv_t, wo_t, w1_t, w2_t;  // fast path: each weight transposed once a step, (in, out)
    };
    std::vector<Layer> L;
    std::vector<Buf<S>> res;  // residual stream entering block l (res[layers] leaves the last block)
    Buf<S> lnf, lnf_mean, lnf_rstd, logits, probs, losses;
    Buf<S> head_t;  // fast path: the head's weight transposed, (D, V)
    // backward scratch of the whole-batch paths
    Buf<S> dres, dln, dq, dk, dv, datty, dfch, dfch_act, dqn, dkn, dlogits;
    Buf<S> gpart;  // the fast path's partial gradients, one block per chunk (run_model)

    void ensure(const ModelConfig& c, int64_t b, int64_t t, bool fast_fused) {
        if (pos.empty() && c.pos == PosKind::Sinusoidal) {
            pos.resize(static_cast<size_t>(c.max_seq * c.d_model));
            nn::sinusoidal_positions(pos.data(), c.max_seq, c.d_model);
        }
        if (pos.empty() && c.pos == PosKind::None) pos.assign(static_cast<size_t>(c.max_seq * c.d_model), S(0));
        if (b == B && t == T && fast_fused == fused) return;
        B = b;
        T = t;
        fused = fast_fused;
        const auto N = static_cast<size_t>(b * t), D = static_cast<size_t>(c.d_model);
        const auto QK = static_cast<size_t>(c.heads * c.d_k), VV = static_cast<size_t>(c.heads * c.d_v);
        const auto F = static_cast<size_t>(c.d_ff), V = static_cast<size_t>(c.vocab);
        const auto HN = static_cast<size_t>(c.heads) * N, ATT = static_cast<size_t>(b * c.heads * t * t);
        const bool cos = c.scale.kind == ScaleKind::Cosine;
        const bool weights = !attn_kind_linear(c.variant.kind);  // linear attention has no (T, T) weights
        // resize, never free: a run alternates training and evaluation batches of other sizes,
        // and a buffer that shrinks keeps its memory for the next larger batch (no page faults,
        // no zeroing of fresh pages at every evaluation)
        L.resize(static_cast<size_t>(c.layers));
        for (auto& l : L) {
            l.ln1.resize(N * D); l.ln1_mean.resize(N); l.ln1_rstd.resize(N);
            l.att.resize(weights ? ATT : 0); l.atty.resize(N * VV); l.mid.resize(N * D);
            l.ln2.resize(N * D); l.ln2_mean.resize(N); l.ln2_rstd.resize(N);
            l.fch.resize(N * F); l.fch_act.resize(N * F);
            if (fused) {
                l.qkv.resize(N * (2 * QK + VV)); l.wqkv.resize((2 * QK + VV) * D); l.bqkv.resize(2 * QK + VV);
            } else {
                l.q.resize(N * QK); l.k.resize(N * QK); l.v.resize(N * VV);
                l.attproj.resize(N * D); l.fcproj.resize(N * D);
                if (cos) { l.qn.resize(N * QK); l.kn.resize(N * QK); l.qnorm.resize(HN); l.knorm.resize(HN); }
            }
        }
        res.resize(static_cast<size_t>(c.layers + 1));
        for (auto& r : res) r.resize(N * D);
        lnf.resize(N * D); lnf_mean.resize(N); lnf_rstd.resize(N);
        logits.resize(N * V); probs.resize(N * V); losses.resize(N);
        if (fused) return;
        dres.resize(N * D); dln.resize(N * D); dq.resize(N * QK); dk.resize(N * QK); dv.resize(N * VV);
        datty.resize(N * VV); dfch.resize(N * F); dfch_act.resize(N * F); dlogits.resize(N * V);
        if (cos) { dqn.resize(N * QK); dkn.resize(N * QK); }
    }
};

// Each op through the reference or the fast path.
template <class S>
struct Ops {
    bool fast;
    int threads;
    // WT: W^T (C, OC) when the caller made it (fast path only; fast_ops.hpp)
    void matmul_fwd(S* out, const S* inp, const S* W, const S* b, int64_t N, int64_t C, int64_t OC,
                    const S* WT = nullptr) const {
        if (fast) nn::matmul_forward_fast(out, inp, W, b, N, C, OC, threads, WT);
        else nn::matmul_forward(out, inp, W, b, N, C, OC);
    }
    // Into::Set: dinp is written, not added to (the reference ops add, so it is zeroed first)
    void matmul_bwd(S* dinp, S* dW, S* db, const S* dout, const S* inp, const S* W, int64_t N, int64_t C,
                    int64_t OC, Into into = Into::Add) const {
        if (fast) return nn::matmul_backward_fast(dinp, dW, db, dout, inp, W, N, C, OC, threads, into);
        if (into == Into::Set) std::fill(dinp, dinp + N * C, S(0));
        nn::matmul_backward(dinp, dW, db, dout, inp, W, N, C, OC);
    }
    // the MLP's fc1 and its activation: pre = inp W^T + b, act = act(pre)
    void fc_act_fwd(S* pre, S* act, const S* inp, const S* W, const S* b, int64_t N, int64_t C, int64_t OC,
                    bool relu, const S* WT = nullptr) const {
        if (fast) return nn::matmul_act_forward_fast(pre, act, inp, W, b, N, C, OC, relu, threads, WT);
        matmul_fwd(pre, inp, W, b, N, C, OC);
        act_fwd(act, pre, N * OC, relu);
    }
    // the MLP's fc2 backward through the activation: dpre = act'(pre) o (dout W) (Set); dact
    // is scratch for the reference path
    void fc_act_bwd(S* dpre, S* dact, S* dW, S* db, const S* dout, const S* act, const S* pre, const S* W, int64_t N,
                    int64_t C, int64_t OC, bool relu) const {
        if (fast) return nn::matmul_act_backward_fast(dpre, dW, db, dout, act, pre, W, N, C, OC, relu, threads);
        matmul_bwd(dact, dW, db, dout, act, W, N, C, OC, Into::Set);
        std::fill(dpre, dpre + N * C, S(0));
        act_bwd(dpre, pre, dact, N * C, relu);
    }
    void ln_fwd(S* out, S* mean, S* rstd, const S* inp, const S* w, const S* b, int64_t N, int64_t D) const {
        if (fast) nn::layernorm_forward_fast(out, mean, rstd, inp, w, b, N, D, threads);
        else nn::layernorm_forward(out, mean, rstd, inp, w, b, N, D);
    }
    void ln_bwd(S* dinp, S* dw, S* db, const S* dout, const S* inp, const S* w, const S* mean, const S* rstd,
                int64_t N, int64_t D, Into into = Into::Add) const {
        if (fast) return nn::layernorm_backward_fast(dinp, dw, db, dout, inp, w, mean, rstd, N, D, threads, into);
        if (into == Into::Set) std::fill(dinp, dinp + N * D, S(0));
        nn::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, D);
    }
    void act_fwd(S* out, const S* inp, int64_t n, bool relu) const {
        if (fast) nn::activation_forward_fast(out, inp, n, relu, threads);
        else if (relu) nn::relu_forward(out, inp, n);
        else nn::gelu_forward(out, inp, n);
    }
    void act_bwd(S* dinp, const S* inp, const S* dout, int64_t n, bool relu) const {
        if (fast) nn::activation_backward_fast(dinp, inp, dout, n, relu, threads);
        else if (relu) nn::relu_backward(dinp, inp, dout, n);
        else nn::gelu_backward(dinp, inp, dout, n);
    }
    void att_fwd(S* out, S* att, const S* q, const S* k, const S* v, int64_t B, int64_t T, int64_t H, int64_t Dk,
                 int64_t Dv, S f, bool causal, float p, uint64_t seed) const {
        if (fast)
            cpu::training_attention_forward(out, att, q, k, v, B, T, H, Dk, Dv, f, causal, p, seed, threads,
                                            nn::training_gemm_kernel());
        else nn::self_attention_forward(out, att, q, k, v, B, T, H, Dk, Dv, f, causal, p, seed);
    }
    int64_t xent_fwd(S* losses, S* probs, const S* logits, const int32_t* targets, int64_t N, int64_t V) const {
        if (fast) return nn::crossentropy_forward_fast(losses, probs, logits, targets, N, V, threads);
        return nn::crossentropy_forward(losses, probs, logits, targets, N, V);
    }
    void xent_bwd(S* dlogits, const S* probs, const int32_t* targets, S scale, int64_t N, int64_t V,
                  Into into = Into::Add) const {
        if (fast) return nn::crossentropy_backward_fast(dlogits, probs, targets, scale, N, V, threads, into);
        if (into == Into::Set) std::fill(dlogits, dlogits + N * V, S(0));
        nn::crossentropy_backward(dlogits, probs, targets, scale, N, V);
    }
    void add(S* out, const S* a, const S* b, int64_t n) const {
        if (fast) nn::residual_forward_fast(out, a, b, n, threads);
        else nn::residual_forward(out, a, b, n);
    }
    void zero(Buf<S>& b) const {
        if (fast) nn::zero_fast(b.data(), static_cast<int64_t>(b.size()), threads);
        else std::fill(b.begin(), b.end(), S(0));
    }
    // the fast backward reads the forward's weights att; the reference recomputes them (causal)
    void att_bwd(S* dq, S* dk, S* dv, const S* dout, const S* q, const S* k, const S* v, const S* att, int64_t B,
                 int64_t T, int64_t H, int64_t Dk, int64_t Dv, S f, bool causal, float p, uint64_t seed) const {
        if (fast)
            cpu::training_attention_backward(dq, dk, dv, dout, q, k, v, att, B, T, H, Dk, Dv, f, p, seed, threads,
                                             nn::training_gemm_kernel());
        else nn::self_attention_backward(dq, dk, dv, dout, q, k, v, B, T, H, Dk, Dv, f, causal, p, seed);
    }
};

uint64_t layer_seed(uint64_t step_seed, int64_t l) {
    return mix64(step_seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(l + 1)));
}

void check_batch(const ModelConfig& c, const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T) {
    if (B <= 0 || T <= 0) throw InputError("batch: B and T must be at least 1");
    if (T > c.max_seq)
        throw InputError("seq: " + std::to_string(T) + " tokens, more than the model's max_seq " +
                         std::to_string(c.max_seq));
    for (int64_t i = 0; i < B * T; ++i) {
        if (tokens[i] < 0 || tokens[i] >= c.vocab)
            throw InputError("tokens: token " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                             " is outside [0, " + std::to_string(c.vocab) + ")");
        if (targets && (targets[i] < -1 || targets[i] >= c.vocab))
            throw InputError("targets: target " + std::to_string(targets[i]) + " at position " + std::to_string(i) +
                             " is outside [-1, " + std::to_string(c.vocab) + ")");
    }
}

// Where each parameter's gradient lives in one chunk's block of partial gradients (the fast
// path): params() order, except that layer l's q, k, v weights sit side by side, and so do
// their biases, so the one stacked q|k|v GEMM writes them in place.
struct PartialLayout {
    std::vector<int64_t> off;  // per parameter
    int64_t size = 0;          // floats per chunk
};

PartialLayout partial_layout(const std::vector<int64_t>& sizes, size_t base, int64_t layers) {
    PartialLayout p;
    p.off.assign(sizes.size(), -1);
    auto place = [&](size_t i) {
        p.off[i] = p.size;
        p.size += sizes[i];
    };
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (p.off[i] >= 0) continue;
        const bool in_block = i >= base && i < base + static_cast<size_t>(layers * kPerBlock);
        const int k = in_block ? static_cast<int>((i - base) % kPerBlock) : -1;
        place(i);
        if (k == kQW || k == kQB) {  // then k's and v's: kKW = kQW + 2, kVW = kQW + 4 (weights and biases alike)
            place(i + 2);
            place(i + 4);
        }
    }
    return p;
}

// One pass of the whole model, forward (and backward when gradients are given). P / G: parameter
// and gradient pointers in params() order. Gradients are overwritten.
//
// The batch is cut into chunks of whole sequences (kChunkTokens tokens at most, one sequence
// at least); sequences never meet (attention stays within one), so a chunk goes through every
// layer on its own. The fast path (fused) runs one chunk per work item on one thread each, so
// its activations stay in the core's cache from one op to the next and the threads meet only
// three times a step (after the forward pass, after the backward pass, after the sum of the
// gradients). Each chunk's weight gradients go to its own block of partial gradients, summed
// in chunk order afterwards: the result depends on the chunk size, never on the thread count.
// Where the chunks are fewer than the threads, the chunks run one after another, each op on
// every thread (same numbers). The reference ops, the cosine scale and variant_attention
// (a pad token, a planted bug, the experiments' knobs) take the whole batch as one chunk.
//
// The attention of a block runs in one of four modes, each its own pair of functions:
//   fused      the fast path's one q|k|v GEMM and attention_*_fast on the chunk (plain config)
//   plain      separate q, k, v projections, the reference or fast attention on the whole batch
//   cosine     the same with q and k normalised per head (and the learned temperature)
//   variant    variant_attention (a pad token, a planted bug, the experiments' knobs)
// The rest of a block (o_proj, the residuals, LayerNorm, the MLP) is shared by all four.
template <class S>
class Engine {
public:
    Engine(const ModelConfig& c, const std::vector<const S*>& P, const std::vector<int64_t>& sizes, Acts<S>& a,
           const int32_t* tokens, const int32_t* targets, int64_t B, int64_t T, bool train_mode, uint64_t step_seed,
           const Ops<S>& op_in)
        : c_(c), P_(P), sizes_(sizes), a_(a), tokens_(tokens), targets_(targets), B_(B), T_(T),
          step_seed_(step_seed), op_(op_in) {
        // A pad token or a planted bug: the reference ops (one thread) and variant_attention.
        const bool debug = c.bug != AttnBug::None || c.pad_token >= 0;
        if (debug) op_.fast = false;
        cos_ = c.scale.kind == ScaleKind::Cosine;
        // the attention of attn/cpu/variant_attention.hpp: a pad token, a bug or one of the experiments' knobs
        variant_ = debug || c.attention_variant();
        // the fast path's one q|k|v GEMM (cosine keeps them apart; a variant runs the whole batch)
        fused_ = op_.fast && !cos_ && !variant_;
        a.ensure(c, B, T, fused_);
        D_ = c.d_model, H_ = c.heads, Dk_ = c.d_k, Dv_ = c.d_v, F_ = c.d_ff, V_ = c.vocab;
        QK_ = H_ * Dk_, VV_ = H_ * Dv_, W3_ = 2 * QK_ + VV_;
        learned_ = c.pos == PosKind::Learned;
        relu_ = c.act == Activation::Relu;
        factor_ = static_cast<S>(c.scale.factor(Dk_));
        p_ = train_mode ? c.dropout : 0.0f;
        base_ = learned_ ? 2 : 1;
        i_lnfw_ = base_ + static_cast<size_t>(c.layers * kPerBlock), i_lnfb_ = i_lnfw_ + 1, i_head_ = i_lnfw_ + 2;
        i_tau_ = i_head_ + 1;  // learned cosine temperature: log_tau of layer l at i_tau + l
        learn_tau_ = cos_ && c.learn_temperature;
        // chunks of whole sequences; the threads go across chunks (inner ops on one thread) or,
        // where the chunks are too few, into each op
        per_chunk_ = fused_ ? std::max<int64_t>(1, nn::kChunkTokens / T) : B;
        n_chunks_ = (B + per_chunk_ - 1) / per_chunk_;
        across_ = fused_ && resolve_threads(op_.threads) > 1 && n_chunks_ >= resolve_threads(op_.threads);
        in_ = op_;
        if (across_) in_.threads = 1;
    }

    StepStats forward();
    void backward(const std::vector<S*>& g, const StepStats& st);

private:
    struct Rows {
        int64_t b0, nb, r0, n;  // first sequence, sequences, first token row, token rows
    };
    // the gradients flowing back through a chunk (fused path: buffers of the thread)
    struct Flow {
        S *dlogits, *dln, *dres, *datty, *dfch, *dfch_act;
    };

    size_t bp(int64_t l, int k) const { return base_ + static_cast<size_t>(l * kPerBlock + k); }
    // the factor of layer l's scores: exp(-log_tau) when learned, else the config's
    S factor_of(int64_t l) const { return learn_tau_ ? std::exp(-P_[i_tau_ + static_cast<size_t>(l)][0]) : factor_; }
    uint64_t seed_of(int64_t l) const { return layer_seed(step_seed_, l); }
    Rows rows_of(int64_t ci) const {
        const int64_t b0 = ci * per_chunk_, nb = std::min(per_chunk_, B_ - b0);
        return Rows{b0, nb, b0 * T_, nb * T_};
    }
    template <class Fn>
    void for_chunks(Fn&& fn) const {
        if (across_) parallel_for(n_chunks_, op_.threads, [&](int64_t ci, int) { fn(ci); });
        else
            for (int64_t ci = 0; ci < n_chunks_; ++ci) fn(ci);
    }
    S* at(Buf<S>& b, const Rows& R, int64_t width) const { return b.data() + R.r0 * width; }
    const S* wt(const Buf<S>& w_t) const { return fused_ ? w_t.data() : nullptr; }

    void transpose_weights();
    int64_t forward_chunk(int64_t ci);
    void attention_forward_fused(typename Acts<S>::Layer& L, const Rows& R, int64_t l);
    void attention_forward_whole(typename Acts<S>::Layer& L, int64_t l);
    void block_rest_forward(typename Acts<S>::Layer& L, const Rows& R, int64_t l, const S* x);
    StepStats loss_stats(const std::vector<int64_t>& counted) const;

    void backward_chunk(int64_t ci, const std::vector<S*>& g, const PartialLayout& lay, S scale);
    Flow flow_of(const Rows& R);
    void mlp_backward(typename Acts<S>::Layer& L, const Rows& R, int64_t l, const std::vector<S*>& gp,
                      const Flow& f);
    void attention_backward_fused(typename Acts<S>::Layer& L, const Rows& R, int64_t l, const std::vector<S*>& gp,
                                  const Flow& f);
    void attention_backward_whole(typename Acts<S>::Layer& L, int64_t l, const std::vector<S*>& g);
    void attention_backward_cosine(typename Acts<S>::Layer& L, int64_t l, const std::vector<S*>& g);
    void attention_backward_plain(typename Acts<S>::Layer& L, int64_t l);
    void sum_partials(const std::vector<S*>& g, const PartialLayout& lay);

    const ModelConfig& c_;
    const std::vector<const S*>& P_;
    const std::vector<int64_t>& sizes_;
    Acts<S>& a_;
    const int32_t *tokens_, *targets_;
    int64_t B_, T_;
    uint64_t step_seed_;
    Ops<S> op_, in_;
    bool cos_ = false, variant_ = false, fused_ = false, learned_ = false, relu_ = false, learn_tau_ = false;
    bool across_ = false;
    int64_t D_ = 0, H_ = 0, Dk_ = 0, Dv_ = 0, F_ = 0, V_ = 0, QK_ = 0, VV_ = 0, W3_ = 0;
    int64_t per_chunk_ = 0, n_chunks_ = 0;
    S factor_ = S(1);
    float p_ = 0.0f;
    size_t base_ = 0, i_lnfw_ = 0, i_lnfb_ = 0, i_head_ = 0, i_tau_ = 0;
};

// w_t (in, out) = w (out, in)^T: the fast GEMMs read the transposed weight, made here once
// a step instead of by every chunk
template <class S>
void transposed(Buf<S>& w_t, const S* w, int64_t out, int64_t in) {
    w_t.resize(static_cast<size_t>(out * in));
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) w_t[static_cast<size_t>(i * out + o)] = w[o * in + i];
}

template <class S>
void Engine<S>::transpose_weights() {
    const int64_t D = D_, QK = QK_, VV = VV_;
    transposed(a_.head_t, P_[i_head_], V_, D);
    for (int64_t l = 0; l < c_.layers; ++l) {
        auto& L = a_.L[static_cast<size_t>(l)];
        transposed(L.wo_t, P_[bp(l, kOW)], D, VV);
        if (c_.mlp) {
            transposed(L.w1_t, P_[bp(l, kFc1W)], F_, D);
            transposed(L.w2_t, P_[bp(l, kFc2W)], D, F_);
        }
        // W_q, W_k, W_v stacked (2QK + VV, D) for the one q|k|v GEMM
        std::copy(P_[bp(l, kQW)], P_[bp(l, kQW)] + QK * D, L.wqkv.data());
        std::copy(P_[bp(l, kKW)], P_[bp(l, kKW)] + QK * D, L.wqkv.data() + QK * D);
        std::copy(P_[bp(l, kVW)], P_[bp(l, kVW)] + VV * D, L.wqkv.data() + 2 * QK * D);
        std::copy(P_[bp(l, kQB)], P_[bp(l, kQB)] + QK, L.bqkv.data());
        std::copy(P_[bp(l, kKB)], P_[bp(l, kKB)] + QK, L.bqkv.data() + QK);
        std::copy(P_[bp(l, kVB)], P_[bp(l, kVB)] + VV, L.bqkv.data() + 2 * QK);
        transposed(L.wqkv_t, L.wqkv.data(), W3_, D);
    }
}

template <class S>
StepStats Engine<S>::forward() {
    if (fused_) transpose_weights();
    std::vector<int64_t> counted(static_cast<size_t>(n_chunks_), 0);
    for_chunks([&](int64_t ci) { counted[static_cast<size_t>(ci)] = forward_chunk(ci); });
    return loss_stats(counted);
}

// One chunk through every layer, the final LayerNorm, the head and (with targets) the loss;
// returns the chunk's scored positions.
template <class S>
int64_t Engine<S>::forward_chunk(int64_t ci) {
    const Rows R = rows_of(ci);
    const int64_t n = R.n, D = D_;
    nn::embedding_forward(at(a_.res[0], R, D), tokens_ + R.r0, P_[0], learned_ ? P_[1] : a_.pos.data(), R.nb, T_,
                          D);
    for (int64_t l = 0; l < c_.layers; ++l) {
        auto& L = a_.L[static_cast<size_t>(l)];
        S* x = at(a_.res[static_cast<size_t>(l)], R, D);
        in_.ln_fwd(at(L.ln1, R, D), at(L.ln1_mean, R, 1), at(L.ln1_rstd, R, 1), x, P_[bp(l, kLn1W)],
                   P_[bp(l, kLn1B)], n, D);
        if (fused_) attention_forward_fused(L, R, l);
        else attention_forward_whole(L, l);  // one chunk: the whole batch
        block_rest_forward(L, R, l, x);
    }
    in_.ln_fwd(at(a_.lnf, R, D), at(a_.lnf_mean, R, 1), at(a_.lnf_rstd, R, 1),
               at(a_.res[static_cast<size_t>(c_.layers)], R, D), P_[i_lnfw_], P_[i_lnfb_], n, D);
    in_.matmul_fwd(at(a_.logits, R, V_), at(a_.lnf, R, D), P_[i_head_], nullptr, n, D, V_,
                   fused_ ? a_.head_t.data() : nullptr);
    if (!targets_) return 0;
    return in_.xent_fwd(at(a_.losses, R, 1), at(a_.probs, R, V_), at(a_.logits, R, V_), targets_ + R.r0, n, V_);
}

// Mode fused: q|k|v from one GEMM on the stacked weights, attention on the chunk's sequences.
template <class S>
void Engine<S>::attention_forward_fused(typename Acts<S>::Layer& L, const Rows& R, int64_t l) {
    const int64_t QK = QK_, W3 = W3_;
    S* qkv = at(L.qkv, R, W3);
    in_.matmul_fwd(qkv, at(L.ln1, R, D_), L.wqkv.data(), L.bqkv.data(), R.n, D_, W3, L.wqkv_t.data());
    cpu::training_attention_forward(at(L.atty, R, VV_), L.att.data() + R.b0 * H_ * T_ * T_, qkv, qkv + QK,
                                    qkv + 2 * QK, R.nb, T_, H_, Dk_, Dv_, factor_, c_.causal, p_, seed_of(l),
                                    in_.threads, nn::training_gemm_kernel(), W3, W3, R.b0);
}

// Modes plain, cosine and variant: separate q, k, v projections of the whole batch; under the
// cosine scale q and k normalised per head first; then the softmax attention of the ops or
// variant_attention.
template <class S>
void Engine<S>::attention_forward_whole(typename Acts<S>::Layer& L, int64_t l) {
    const int64_t n = B_ * T_, D = D_;
    in_.matmul_fwd(L.q.data(), L.ln1.data(), P_[bp(l, kQW)], P_[bp(l, kQB)], n, D, QK_);
    in_.matmul_fwd(L.k.data(), L.ln1.data(), P_[bp(l, kKW)], P_[bp(l, kKB)], n, D, QK_);
    in_.matmul_fwd(L.v.data(), L.ln1.data(), P_[bp(l, kVW)], P_[bp(l, kVB)], n, D, VV_);
    const S* qa = L.q.data();
    const S* ka = L.k.data();
    if (cos_) {
        nn::headnorm_forward(L.qn.data(), L.qnorm.data(), L.q.data(), n, H_, Dk_);
        nn::headnorm_forward(L.kn.data(), L.knorm.data(), L.k.data(), n, H_, Dk_);
        qa = L.qn.data();
        ka = L.kn.data();
    }
    const S f = factor_of(l);
    if (variant_)
        cpu::variant_attention_forward(L.atty.data(), L.att.data(), qa, ka, L.v.data(), tokens_, variant_knobs(c_, l),
                                       B_, T_, f, p_, seed_of(l), in_.threads);
    else
        in_.att_fwd(L.atty.data(), L.att.data(), qa, ka, L.v.data(), B_, T_, H_, Dk_, Dv_, f, c_.causal, p_,
                    seed_of(l));
}

// o_proj, the attention's residual, and (with an MLP) LN2, fc1 + activation, fc2 and the
// second residual: the same in every mode.
template <class S>
void Engine<S>::block_rest_forward(typename Acts<S>::Layer& L, const Rows& R, int64_t l, const S* x) {
    const int64_t n = R.n, D = D_, F = F_;
    // the two projections that feed a residual sum are not needed by the backward pass:
    // on the fast path they go to a buffer of the thread, still in cache for the sum
    static thread_local Buf<S> proj_mine;
    if (fused_ && proj_mine.size() < static_cast<size_t>(n * D)) proj_mine.resize(static_cast<size_t>(n * D));
    S* const attproj = fused_ ? proj_mine.data() : at(L.attproj, R, D);
    S* const fcproj = fused_ ? proj_mine.data() : at(L.fcproj, R, D);
    S* const out = at(a_.res[static_cast<size_t>(l + 1)], R, D);
    in_.matmul_fwd(attproj, at(L.atty, R, VV_), P_[bp(l, kOW)], P_[bp(l, kOB)], n, VV_, D, wt(L.wo_t));
    if (!c_.mlp) {  // attention only: the block's output is mid
        in_.add(out, x, attproj, n * D);
        return;
    }
    in_.add(at(L.mid, R, D), x, attproj, n * D);
    in_.ln_fwd(at(L.ln2, R, D), at(L.ln2_mean, R, 1), at(L.ln2_rstd, R, 1), at(L.mid, R, D), P_[bp(l, kLn2W)],
               P_[bp(l, kLn2B)], n, D);
    in_.fc_act_fwd(at(L.fch, R, F), at(L.fch_act, R, F), at(L.ln2, R, D), P_[bp(l, kFc1W)], P_[bp(l, kFc1B)], n, D,
                   F, relu_, wt(L.w1_t));
    in_.matmul_fwd(fcproj, at(L.fch_act, R, F), P_[bp(l, kFc2W)], P_[bp(l, kFc2B)], n, F, D, wt(L.w2_t));
    in_.add(out, at(L.mid, R, D), fcproj, n * D);
}

template <class S>
StepStats Engine<S>::loss_stats(const std::vector<int64_t>& counted) const {
    StepStats st;
    if (!targets_) return st;
    const int64_t N = B_ * T_;
    for (const int64_t k : counted) st.counted += k;
    double total = 0;
    for (int64_t n = 0; n < N; ++n) {
        total += static_cast<double>(a_.losses[static_cast<size_t>(n)]);
        if (targets_[n] < 0) continue;
        const S* z = a_.logits.data() + n * V_;
        const int64_t arg = std::max_element(z, z + V_) - z;
        if (arg == targets_[n]) ++st.correct;
    }
    st.loss = st.counted ? total / static_cast<double>(st.counted) : 0.0;
    return st;
}

// The backward pass after forward(): g gets the gradients (overwritten).
template <class S>
void Engine<S>::backward(const std::vector<S*>& g, const StepStats& st) {
    // Each fresh gradient buffer is written with Into::Set by the op that produces it (no
    // zero fill, no read of zeros); Into::Add where a second path adds to it (the residuals).
    const S scale = st.counted ? S(1) / static_cast<S>(st.counted) : S(0);
    PartialLayout lay;
    if (fused_) {
        lay = partial_layout(sizes_, base_, c_.layers);
        const auto need = static_cast<size_t>(n_chunks_ * lay.size);
        if (a_.gpart.size() < need) a_.gpart.resize(need);
    } else {
        for (size_t i = 0; i < g.size(); ++i) std::fill(g[i], g[i] + sizes_[i], S(0));
    }
    for_chunks([&](int64_t ci) { backward_chunk(ci, g, lay, scale); });
    if (fused_) sum_partials(g, lay);
}

// The gradients flowing through a chunk: on the fast path in buffers of the thread, which the
// next chunk reuses while they are still in the core's cache (the whole batch's buffers would
// be cold memory at every chunk); else the whole batch's.
template <class S>
typename Engine<S>::Flow Engine<S>::flow_of(const Rows& R) {
    struct Mine {
        Buf<S> dlogits, dln, dres, datty, dfch;
    };
    static thread_local Mine mine;
    auto flow = [&](Buf<S>& whole, Buf<S>& own, int64_t width) {
        if (!fused_) return whole.data() + R.r0 * width;
        if (own.size() < static_cast<size_t>(R.n * width)) own.resize(static_cast<size_t>(R.n * width));
        return own.data();
    };
    Flow f{};
    f.dlogits = flow(a_.dlogits, mine.dlogits, V_);
    f.dln = flow(a_.dln, mine.dln, D_);
    f.dres = flow(a_.dres, mine.dres, D_);
    f.datty = flow(a_.datty, mine.datty, VV_);
    f.dfch = flow(a_.dfch, mine.dfch, F_);
    f.dfch_act = fused_ ? nullptr : a_.dfch_act.data();  // the reference path's scratch only
    return f;
}

template <class S>
void Engine<S>::backward_chunk(int64_t ci, const std::vector<S*>& g, const PartialLayout& lay, S scale) {
    const Rows R = rows_of(ci);
    const int64_t n = R.n, D = D_;
    const Flow f = flow_of(R);
    // this chunk's gradients: its block of partial gradients (zeroed here), or G itself
    std::vector<S*> gp = g;
    if (fused_) {
        S* block = a_.gpart.data() + ci * lay.size;
        std::fill(block, block + lay.size, S(0));
        for (size_t i = 0; i < gp.size(); ++i) gp[i] = block + lay.off[i];
    }
    in_.xent_bwd(f.dlogits, at(a_.probs, R, V_), targets_ + R.r0, scale, n, V_, Into::Set);
    in_.matmul_bwd(f.dln, gp[i_head_], nullptr, f.dlogits, at(a_.lnf, R, D), P_[i_head_], n, D, V_, Into::Set);
    in_.ln_bwd(f.dres, gp[i_lnfw_], gp[i_lnfb_], f.dln, at(a_.res[static_cast<size_t>(c_.layers)], R, D),
               P_[i_lnfw_], at(a_.lnf_mean, R, 1), at(a_.lnf_rstd, R, 1), n, D, Into::Set);
    for (int64_t l = c_.layers - 1; l >= 0; --l) {
        auto& L = a_.L[static_cast<size_t>(l)];
        const S* x = at(a_.res[static_cast<size_t>(l)], R, D);
        if (c_.mlp) mlp_backward(L, R, l, gp, f);  // attention only: d mid = d out
        // mid = x + o_proj(attention(q, k, v)): dres flows to x unchanged, and through attention
        in_.matmul_bwd(f.datty, gp[bp(l, kOW)], gp[bp(l, kOB)], f.dres, at(L.atty, R, VV_), P_[bp(l, kOW)], n, VV_,
                       D, Into::Set);
        if (fused_) attention_backward_fused(L, R, l, gp, f);
        else attention_backward_whole(L, l, g);  // one chunk: the whole batch
        in_.ln_bwd(f.dres, gp[bp(l, kLn1W)], gp[bp(l, kLn1B)], f.dln, x, P_[bp(l, kLn1W)], at(L.ln1_mean, R, 1),
                   at(L.ln1_rstd, R, 1), n, D);  // dres is now d x
    }
    nn::embedding_backward(gp[0], learned_ ? gp[1] : nullptr, f.dres, tokens_ + R.r0, R.nb, T_, D);
}

// x_out = mid + fc2(act(fc1(ln2(mid)))): dres flows to mid unchanged, and through the MLP
// (fc2's backward and the activation's in one pass: dfch = act'(fch) o (dres W_2)).
template <class S>
void Engine<S>::mlp_backward(typename Acts<S>::Layer& L, const Rows& R, int64_t l, const std::vector<S*>& gp,
                             const Flow& f) {
    const int64_t n = R.n, D = D_, F = F_;
    in_.fc_act_bwd(f.dfch, f.dfch_act, gp[bp(l, kFc2W)], gp[bp(l, kFc2B)], f.dres, at(L.fch_act, R, F),
                   at(L.fch, R, F), P_[bp(l, kFc2W)], n, F, D, relu_);
    in_.matmul_bwd(f.dln, gp[bp(l, kFc1W)], gp[bp(l, kFc1B)], f.dfch, at(L.ln2, R, D), P_[bp(l, kFc1W)], n, D, F,
                   Into::Set);
    in_.ln_bwd(f.dres, gp[bp(l, kLn2W)], gp[bp(l, kLn2B)], f.dln, at(L.mid, R, D), P_[bp(l, kLn2W)],
               at(L.ln2_mean, R, 1), at(L.ln2_rstd, R, 1), n, D);  // dres is now d mid
}

// Mode fused, backward: d q|k|v in one buffer of the thread, then the stacked (2QK + VV, D)
// gradient lands on W_q, W_k, W_v's side-by-side blocks of the chunk's partial gradients.
template <class S>
void Engine<S>::attention_backward_fused(typename Acts<S>::Layer& L, const Rows& R, int64_t l,
                                         const std::vector<S*>& gp, const Flow& f) {
    static thread_local Buf<S> dqkv_mine;
    const int64_t n = R.n, QK = QK_, W3 = W3_;
    if (dqkv_mine.size() < static_cast<size_t>(n * W3)) dqkv_mine.resize(static_cast<size_t>(n * W3));
    S* const dqkv = dqkv_mine.data();
    const S* qkv = at(L.qkv, R, W3);
    cpu::training_attention_backward(dqkv, dqkv + QK, dqkv + 2 * QK, f.datty, qkv, qkv + QK, qkv + 2 * QK,
                                     L.att.data() + R.b0 * H_ * T_ * T_, R.nb, T_, H_, Dk_, Dv_, factor_, p_,
                                     seed_of(l), in_.threads, nn::training_gemm_kernel(), W3, W3,
                                     /*accumulate=*/false, R.b0);
    in_.matmul_bwd(f.dln, gp[bp(l, kQW)], gp[bp(l, kQB)], dqkv, at(L.ln1, R, D_), L.wqkv.data(), n, D_, W3,
                   Into::Set);
}

// Modes plain, cosine and variant, backward: dq, dk, dv of the whole batch, then the three
// projections' backward into dln.
template <class S>
void Engine<S>::attention_backward_whole(typename Acts<S>::Layer& L, int64_t l, const std::vector<S*>& g) {
    const int64_t n = B_ * T_, D = D_;
    in_.zero(a_.dq);
    in_.zero(a_.dk);
    in_.zero(a_.dv);
    if (cos_) attention_backward_cosine(L, l, g);
    else attention_backward_plain(L, l);
    in_.zero(a_.dln);
    in_.matmul_bwd(a_.dln.data(), g[bp(l, kQW)], g[bp(l, kQB)], a_.dq.data(), L.ln1.data(), P_[bp(l, kQW)], n, D,
                   QK_);
    in_.matmul_bwd(a_.dln.data(), g[bp(l, kKW)], g[bp(l, kKB)], a_.dk.data(), L.ln1.data(), P_[bp(l, kKW)], n, D,
                   QK_);
    in_.matmul_bwd(a_.dln.data(), g[bp(l, kVW)], g[bp(l, kVB)], a_.dv.data(), L.ln1.data(), P_[bp(l, kVW)], n, D,
                   VV_);
}

// Mode cosine: the attention's backward gives d q̂, d k̂; the learned temperature's gradient is
// read from them, then the per-head normalisation's backward gives dq, dk.
template <class S>
void Engine<S>::attention_backward_cosine(typename Acts<S>::Layer& L, int64_t l, const std::vector<S*>& g) {
    const int64_t n = B_ * T_;
    in_.zero(a_.dqn);
    in_.zero(a_.dkn);
    const S f = factor_of(l);
    if (variant_)
        cpu::variant_attention_backward(a_.dqn.data(), a_.dkn.data(), a_.dv.data(), a_.datty.data(), L.qn.data(),
                                        L.kn.data(), L.v.data(), L.att.data(), tokens_, variant_knobs(c_, l), B_, T_,
                                        f, p_, seed_of(l), in_.threads);
    else
        in_.att_bwd(a_.dqn.data(), a_.dkn.data(), a_.dv.data(), a_.datty.data(), L.qn.data(), L.kn.data(),
                    L.v.data(), L.att.data(), B_, T_, H_, Dk_, Dv_, f, c_.causal, p_, seed_of(l));
    // dqn holds only the attention's gradient here; the planted no-scale bug ignores tau
    if (learn_tau_ && c_.bug != AttnBug::NoScale)
        g[i_tau_ + static_cast<size_t>(l)][0] += static_cast<S>(nn::temperature_backward(L.qn.data(), a_.dqn.data(),
                                                                                          n * QK_));
    nn::headnorm_backward(a_.dq.data(), a_.dqn.data(), L.qn.data(), L.qnorm.data(), n, H_, Dk_);
    nn::headnorm_backward(a_.dk.data(), a_.dkn.data(), L.kn.data(), L.knorm.data(), n, H_, Dk_);
}

// Modes plain and variant (any scale but cosine): the attention's backward straight into dq, dk, dv.
template <class S>
void Engine<S>::attention_backward_plain(typename Acts<S>::Layer& L, int64_t l) {
    if (variant_)
        cpu::variant_attention_backward(a_.dq.data(), a_.dk.data(), a_.dv.data(), a_.datty.data(), L.q.data(),
                                        L.k.data(), L.v.data(), L.att.data(), tokens_, variant_knobs(c_, l), B_, T_,
                                        factor_, p_, seed_of(l), in_.threads);
    else
        in_.att_bwd(a_.dq.data(), a_.dk.data(), a_.dv.data(), a_.datty.data(), L.q.data(), L.k.data(), L.v.data(),
                    L.att.data(), B_, T_, H_, Dk_, Dv_, factor_, c_.causal, p_, seed_of(l));
}

// G = the chunks' partial gradients summed in chunk order, by pieces of kSumPiece.
template <class S>
void Engine<S>::sum_partials(const std::vector<S*>& g, const PartialLayout& lay) {
    constexpr int64_t kSumPiece = 4096;
    struct Piece {
        size_t i;
        int64_t j0, len;
    };
    std::vector<Piece> pieces;
    for (size_t i = 0; i < g.size(); ++i)
        for (int64_t j0 = 0; j0 < sizes_[i]; j0 += kSumPiece)
            pieces.push_back({i, j0, std::min(kSumPiece, sizes_[i] - j0)});
    parallel_for(static_cast<int64_t>(pieces.size()), op_.threads, [&](int64_t k, int) {
        const Piece& pc = pieces[static_cast<size_t>(k)];
        S* dst = g[pc.i] + pc.j0;
        const S* src = a_.gpart.data() + lay.off[pc.i] + pc.j0;
        std::copy(src, src + pc.len, dst);
        for (int64_t ci = 1; ci < n_chunks_; ++ci) {
            const S* s = src + ci * lay.size;
            for (int64_t j = 0; j < pc.len; ++j) dst[j] += s[j];
        }
    });
}

// The whole model, forward and (when G is given and there are targets) backward.
template <class S>
StepStats run_model(const ModelConfig& c, const std::vector<const S*>& P, const std::vector<S*>* G,
                    const std::vector<int64_t>& sizes, Acts<S>& a, const int32_t* tokens, const int32_t* targets,
                    int64_t B, int64_t T, bool train_mode, uint64_t step_seed, const Ops<S>& op) {
    Engine<S> e(c, P, sizes, a, tokens, targets, B, T, train_mode, step_seed, op);
    const StepStats st = e.forward();
    if (targets && G) e.backward(*G, st);
    return st;
}

// The parameters' pointers and sizes a pass reads (params() order).
template <class S>
struct Ptrs {
    std::vector<const S*> P;
    std::vector<S*> G;
    std::vector<int64_t> sizes;
};

}  // namespace

}  // namespace attn
