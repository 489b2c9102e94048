// lib/cpu/src/flash_backward/flash_backward.cpp: attention_flash_backward(), the public entry of
// the tiled backward (attn/cpu/flash_backward.hpp): checks the inputs, prepares
// the kernels' operands (pass 0), runs one work item per (b, h, chunk of key
// blocks) on attn::parallel_for, then sums the chunks' dQ shares in a fixed order
// and takes dq, dk back through the cosine normalisation (pass 8).
#include "attn/cpu/flash_backward.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/cpu/flash.hpp"
#include "flash/flash_args.hpp"
#include "flash_backward_args.hpp"

namespace attn {

namespace fd = flash_detail;

namespace {

std::vector<const fd::BwdKernel*> available() {
    std::vector<const fd::BwdKernel*> ks;
    if (fd::bwd_avx512_kernel() != nullptr && fd::cpu_avx512()) ks.push_back(fd::bwd_avx512_kernel());
    if (fd::bwd_avx2_kernel() != nullptr && fd::cpu_avx2()) ks.push_back(fd::bwd_avx2_kernel());
    if (fd::bwd_neon_kernel() != nullptr && fd::cpu_neon()) ks.push_back(fd::bwd_neon_kernel());
    ks.push_back(fd::bwd_generic_kernel());
    return ks;
}

const fd::BwdKernel* find_kernel(std::string_view name) {
    const auto ks = available();
    if (name == "auto") return ks.front();
    for (const fd::BwdKernel* k : ks)
        if (name == k->name) return k;
    std::string names;
    for (const fd::BwdKernel* k : ks) names += std::string(names.empty() ? "" : ", ") + k->name;
    throw InputError("unknown flash backward kernel '" + std::string(name) +
                     "': must be auto or one of this CPU's kernels (" + names + ")");
}

// Enough work items for this many threads, whatever the thread count asked for:
// the split into chunks, and so every sum, depends on the sizes alone.
constexpr int64_t kMinItems = 16;

// Rows per work item of passes 0 and 8.
constexpr int64_t kRowsPerItem = 256;

// F.normalize's eps, the one l2_normalize_rows and the reference backward use.
constexpr double kNormEps = kL2NormalizeEps;

// 1 / max(|x|, eps), the sum of squares in double as in l2_normalize_rows.
float inv_norm(const float* x, int64_t n) {
    double ss = 0;
    for (int64_t d = 0; d < n; ++d) ss += static_cast<double>(x[d]) * x[d];
    return 1.0f / static_cast<float>(std::max(std::sqrt(ss), kNormEps));
}

// dx̂ -> dx through x̂ = x r, r = 1 / max(|x|, eps), in place:
// dx = r (dx̂ - x̂ (x̂ · dx̂)) when |x| > eps; dx = r dx̂ (r = 1/eps, a constant) otherwise.
void normalize_backward(float* dx, const float* x, int64_t n) {
    double ss = 0;
    for (int64_t d = 0; d < n; ++d) ss += static_cast<double>(x[d]) * x[d];
    const double norm = std::sqrt(ss);
    const float r = 1.0f / static_cast<float>(std::max(norm, kNormEps));
    if (norm <= kNormEps) {
        for (int64_t d = 0; d < n; ++d) dx[d] *= r;
        return;
    }
    float dot = 0;  // x̂ · dx̂
    for (int64_t d = 0; d < n; ++d) dot += x[d] * r * dx[d];
    for (int64_t d = 0; d < n; ++d) dx[d] = r * (dx[d] - x[d] * r * dot);
}

void check_shape(const Tensor& t, const Shape& want, const char* what) {
    if (t.shape != want)
        throw ShapeError(
            fmt::format("{} must be {} for these Q, K, V, got {}", what, shape_str(want), shape_str(t.shape)));
}

// The kernel's scratch rows (BwdArgs has them const): Q̂s, K̂ (cosine), dO padded (null when
// Dv needs no padding), L2, D, F2, Lo2 and the dQ shares (G slices of n_qs floats).
struct Scratch {
    float *qs, *kn, *dOp, *L2, *Dr, *F2, *Lo2, *dqp;
    size_t n_qs;
};

struct Inputs {
    const Tensor &q, &k, &out, &dout, &lse;
};

void prepare_rows(const fd::BwdArgs& a, const Scratch& s, const Inputs& in, const Mask& mask, float scale,
                  bool cosine, int threads) {
    // pass 0: per query row, Q̂s = Q̂ scale padded, dO padded, L2 = L log2(e)
    // (+inf for L = -inf), D = rowsum(dO ∘ O), F2 (see BwdArgs); per key row (cosine), K̂.
    const int64_t BH = a.B * a.H;
    const int64_t qchunks = (a.Tq + kRowsPerItem - 1) / kRowsPerItem;
    const int64_t kchunks = cosine ? (a.Tk + kRowsPerItem - 1) / kRowsPerItem : 0;
    const Tensor &q = in.q, &k = in.k, &out = in.out, &dout = in.dout, &lse = in.lse;
    float *qs = s.qs, *kn = s.kn, *dOp = s.dOp, *L2 = s.L2, *Dr = s.Dr, *F2 = s.F2, *Lo2 = s.Lo2;
    const bool copy_dO = dOp != nullptr;
    parallel_for(BH * (qchunks + kchunks), threads, [&](int64_t it, int) {
        const int64_t bh = it / (qchunks + kchunks), c = it % (qchunks + kchunks);
        if (c >= qchunks) {
            const int64_t r0 = (c - qchunks) * kRowsPerItem, r1 = std::min(a.Tk, r0 + kRowsPerItem);
            for (int64_t r = bh * a.Tk + r0; r < bh * a.Tk + r1; ++r) {
                const float f = inv_norm(k.ptr() + r * a.Dk, a.Dk);
                for (int64_t d = 0; d < a.Dk; ++d) kn[r * a.Dk + d] = k.ptr()[r * a.Dk + d] * f;
            }
            return;
        }
        const int64_t r0 = c * kRowsPerItem, r1 = std::min(a.Tq, r0 + kRowsPerItem);
        for (int64_t r = bh * a.Tq + r0; r < bh * a.Tq + r1; ++r) {
            const float* qr = q.ptr() + r * a.Dk;
            const float f = scale * (cosine ? inv_norm(qr, a.Dk) : 1.0f);
            float* qd = qs + r * a.Dkp;
            for (int64_t d = 0; d < a.Dk; ++d) qd[d] = qr[d] * f;
            for (int64_t d = a.Dk; d < a.Dkp; ++d) qd[d] = 0.0f;
            const float* dr = dout.ptr() + r * a.Dv;
            const float* orow = out.ptr() + r * a.Dv;
            if (copy_dO) {
                std::memcpy(dOp + r * a.Dvp, dr, sizeof(float) * static_cast<size_t>(a.Dv));
                for (int64_t e = a.Dv; e < a.Dvp; ++e) dOp[r * a.Dvp + e] = 0.0f;
            }
            float dsum = 0;
            for (int64_t e = 0; e < a.Dv; ++e) dsum += dr[e] * orow[e];
            Dr[r] = dsum;
            const float l = lse.ptr()[r];
            L2[r] =
                l == -std::numeric_limits<float>::infinity() ? std::numeric_limits<float>::infinity() : l * fd::kLog2e;
            F2[r] = a.fill2;
            Lo2[r] = 0.0f;
            if (!a.fill_ninf && a.Tk > 0 &&
                mask.row(r / (a.H * a.Tq), (r / a.Tq) % a.H, a.Tk).allowed_count(r % a.Tq) == 0) {
                F2[r] = 0.0f;  // every key masked: uniform weights 2^(0 - log2 Tk) = 1/Tk
                L2[r] = std::log2(static_cast<float>(a.Tk));
            }
        }
    });
}

void finish_rows(const fd::BwdArgs& a, const Scratch& s, const Tensor& q, const Tensor& k, AttentionGrads& g,
                 float scale, bool cosine, int threads) {
    // pass 8: dQ̂ = scale × the chunks' shares summed in chunk order; cosine:
    // dq, dk back through the normalisation.
    const int64_t BH = a.B * a.H;
    const int64_t qchunks = (a.Tq + kRowsPerItem - 1) / kRowsPerItem;
    const int64_t kchunks = cosine ? (a.Tk + kRowsPerItem - 1) / kRowsPerItem : 0;
    const float* dqp = s.dqp;
    const size_t n_qs = s.n_qs;
    parallel_for(BH * (qchunks + kchunks), threads, [&](int64_t it, int) {
        const int64_t bh = it / (qchunks + kchunks), c = it % (qchunks + kchunks);
        if (c >= qchunks) {
            const int64_t r0 = (c - qchunks) * kRowsPerItem, r1 = std::min(a.Tk, r0 + kRowsPerItem);
            for (int64_t r = bh * a.Tk + r0; r < bh * a.Tk + r1; ++r)
                normalize_backward(g.dk.ptr() + r * a.Dk, k.ptr() + r * a.Dk, a.Dk);
            return;
        }
        const int64_t r0 = c * kRowsPerItem, r1 = std::min(a.Tq, r0 + kRowsPerItem);
        for (int64_t r = bh * a.Tq + r0; r < bh * a.Tq + r1; ++r) {
            float* dq = g.dq.ptr() + r * a.Dk;
            for (int64_t d = 0; d < a.Dk; ++d) {
                float s = 0;
                for (int64_t gi = 0; gi < a.G; ++gi) s += dqp[static_cast<size_t>(gi) * n_qs + r * a.Dkp + d];
                dq[d] = s * scale;
            }
            if (cosine) normalize_backward(dq, q.ptr() + r * a.Dk, a.Dk);
        }
    });
}

}  // namespace

std::vector<std::string> flash_backward_kernels() {
    std::vector<std::string> names;
    for (const fd::BwdKernel* k : available()) names.emplace_back(k->name);
    return names;
}

AttentionGrads attention_flash_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                        const Tensor& lse, const Mask& mask, const AttentionOptions& opt,
                                        const Tensor& dout, int threads, std::string_view kernel,
                                        FlashBackwardStats* stats) {
    // q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv), out, dout (B, H, Tq, Dv), lse (B, H, Tq)
    const fd::BwdKernel* kern = find_kernel(kernel);
    check_attention_inputs(q, k, v, mask, opt);
    refuse_score_options("the tiled attention backward", q, k, opt);
    fd::BwdArgs a;
    a.B = q.dim(0), a.H = q.dim(1), a.Tq = q.dim(2), a.Dk = q.dim(3);
    a.Tk = k.dim(2), a.Dv = v.dim(3);
    check_attention_dout(q, v, dout);
    check_shape(out, {a.B, a.H, a.Tq, a.Dv}, "the forward's output");
    check_shape(lse, {a.B, a.H, a.Tq}, "the forward's log-sum-exp");
    a.Dkp = fd::padded(a.Dk), a.Dvp = fd::padded(a.Dv);
    const bool cosine = opt.scale.kind == ScaleKind::Cosine;
    const float scale = opt.scale.factor(a.Dk);
    a.mask = &mask;
    a.fill_ninf = std::isinf(opt.fill);
    a.fill2 = a.fill_ninf ? opt.fill : opt.fill * fd::kLog2e;
    a.dropout = opt.train && opt.dropout > 0.0f;
    a.drop_p = opt.dropout;
    a.seed = opt.seed;
    const int64_t BH = a.B * a.H;
    const int64_t nkb = (a.Tk + kern->block_k - 1) / kern->block_k;
    a.G = std::max<int64_t>(1, std::min<int64_t>(nkb, (kMinItems + BH - 1) / std::max<int64_t>(BH, 1)));

    AttentionGrads g{Tensor(q.shape), Tensor(k.shape), Tensor(v.shape)};
    a.dk = g.dk.ptr(), a.dv = g.dv.ptr();
    const int64_t items = BH * a.G;
    const int t = static_cast<int>(std::min<int64_t>(resolve_threads(threads), std::max<int64_t>(items, 1)));

    // One allocation holds all scratch: Q̂s, K̂ (cosine), dO (when Dv is not a
    // multiple of the padding), L2, D, the dQ shares and each thread's workspace.
    const bool copy_dO = a.Dvp != a.Dv;
    const size_t n_qs = static_cast<size_t>(BH * a.Tq * a.Dkp);
    const size_t n_kn = cosine ? static_cast<size_t>(BH * a.Tk * a.Dk) : 0;
    const size_t n_dO = copy_dO ? static_cast<size_t>(BH * a.Tq * a.Dvp) : 0;
    const size_t n_row = static_cast<size_t>(BH * a.Tq);
    const size_t n_dqp = static_cast<size_t>(a.G) * n_qs;
    const size_t per = (kern->workspace_floats(a) + 15) / 16 * 16;
    const size_t total = n_qs + n_kn + n_dO + 4 * n_row + n_dqp + per * static_cast<size_t>(t) + 16;
    std::unique_ptr<float[]> raw(new float[total]);
    if (stats != nullptr) {
        stats->kernel = kern->name;
        stats->key_chunks = a.G;
        stats->scratch_bytes = total * sizeof(float);
    }
    float* qs = raw.get();
    float* kn = qs + n_qs;
    float* dOp = kn + n_kn;
    float* L2 = dOp + n_dO;
    float* Dr = L2 + n_row;
    float* F2 = Dr + n_row;
    float* Lo2 = F2 + n_row;
    float* dqp = Lo2 + n_row;
    float* ws = dqp + n_dqp;
    while (reinterpret_cast<uintptr_t>(ws) % 64 != 0) ++ws;
    a.qs = qs, a.kn = cosine ? kn : k.ptr(), a.v = v.ptr(), a.dO = copy_dO ? dOp : dout.ptr();
    a.L2 = L2, a.Lo2 = Lo2, a.Dr = Dr, a.F2 = F2, a.dqp = dqp;
    const Scratch scratch{qs, kn, copy_dO ? dOp : nullptr, L2, Dr, F2, Lo2, dqp, n_qs};

    prepare_rows(a, scratch, {q, k, out, dout, lse}, mask, scale, cosine, threads);

    // pass 0b: rows whose log-sum-exp float32 holds too coarsely (large scores) get it
    // recomputed from the kernel's own scores, split into L2 + Lo2 (BwdArgs)
    const int64_t nqb = (a.Tq + kern->block_q - 1) / kern->block_q;
    if (BH * nqb > 0)
        parallel_for(BH * nqb, t, [&](int64_t item, int tid) {
            kern->refine_item(a, item, ws + per * static_cast<size_t>(tid), L2, Lo2);
        });

    // passes 1-7: the tiles (flash_backward_kernel.hpp)
    if (items > 0)
        parallel_for(items, t,
                     [&](int64_t item, int tid) { kern->run_item(a, item, ws + per * static_cast<size_t>(tid)); });

    finish_rows(a, scratch, q, k, g, scale, cosine, threads);
    return g;
}

AttentionGrads attention_flash_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                        const AttentionOptions& opt, const Tensor& dout, int threads) {
    Tensor lse;
    const Tensor out = attention_flash_with("auto", q, k, v, mask, opt, threads, &lse);
    return attention_flash_backward(q, k, v, out, lse, mask, opt, dout, threads);
}

}  // namespace attn
