// lib/cpu/src/flash/flash.cpp: attention_flash(), the public entry of the tiled CPU
// attention: checks the inputs, turns the options into kernel arguments (log2
// units, see flash_args.hpp), picks the kernel for this CPU, and runs one work
// item per (batch, head, query block) on attn::parallel_for.
#include "attn/cpu/flash.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "attn/core/errors.hpp"
#include "attn/core/parallel.hpp"
#include "attn/cpu/features.hpp"
#include "flash_args.hpp"

namespace attn {

namespace fd = flash_detail;

namespace {

std::vector<const fd::Kernel*> available() {
    std::vector<const fd::Kernel*> ks;
    if (fd::avx512_kernel() != nullptr && cpu_has_avx512()) {
        ks.push_back(fd::avx512_kernel());
        ks.push_back(fd::avx512_kernel()->long_keys);
        ks.push_back(fd::avx512_kernel()->short_queries);
    }
    if (fd::avx2_kernel() != nullptr && cpu_has_avx2()) ks.push_back(fd::avx2_kernel());
    if (fd::neon_kernel() != nullptr && cpu_has_neon()) ks.push_back(fd::neon_kernel());
    ks.push_back(fd::generic_kernel());
    return ks;
}

const fd::Kernel* find_kernel(std::string_view name) {
    const auto ks = available();
    if (name == "auto") return ks.front();
    for (const fd::Kernel* k : ks)
        if (name == k->name) return k;
    std::string names;
    for (const fd::Kernel* k : ks) names += std::string(names.empty() ? "" : ", ") + k->name;
    throw InputError("unknown flash kernel '" + std::string(name) + "': must be auto or one of this CPU's kernels (" +
                     names + ")");
}

// What the score options need besides Args: RoPE's rotated copies of q and k,
// ALiBi's slopes in log2 units. Lives as long as the Args that point into it.
struct ScoreBuffers {
    std::vector<float> q, k, alibi2;
};

// Checks shapes and the mask; fills everything of Args but the data pointers.
fd::Args make_args(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                   const AttentionOptions& opt) {
    check_attention_inputs(q, k, v, mask, opt);
    fd::Args a;
    a.B = q.dim(0), a.H = q.dim(1), a.Tq = q.dim(2), a.Dk = q.dim(3);
    a.Tk = k.dim(2), a.Dv = v.dim(3);
    a.Hkv = k.dim(1);
    a.mask = &mask;
    a.qscale = opt.scale.factor(a.Dk) * fd::kLog2e;
    a.cosine = opt.scale.kind == ScaleKind::Cosine;
    a.fill_ninf = std::isinf(opt.fill);
    a.fill2 = a.fill_ninf ? opt.fill : opt.fill * fd::kLog2e;
    a.dropout = opt.train && opt.dropout > 0.0f;
    a.drop_p = opt.dropout;
    a.seed = opt.seed;
    a.softcap = opt.softcap;
    a.qpos0 = opt.query_offset;
    return a;
}

// Points a.q, a.k (and a.alibi2) at what the options make of q and k: RoPE's
// rotation is a pre-pass over copies (positions query_offset + i and j, the
// reference's rope_rotate), so the kernel's loops see ordinary rows.
void apply_score_options(fd::Args& a, const AttentionOptions& opt, ScoreBuffers& buf, int threads) {
    if (opt.rope) {
        buf.q.assign(a.q, a.q + a.B * a.H * a.Tq * a.Dk);
        buf.k.assign(a.k, a.k + a.B * a.Hkv * a.Tk * a.Dk);
        const double base = static_cast<double>(opt.rope_base);
        // one (b, h) sequence per work item; the angles depend on positions only
        parallel_for(a.B * a.H + a.B * a.Hkv, threads, [&](int64_t s, int) {
            if (s < a.B * a.H)
                rope_rotate(buf.q.data() + s * a.Tq * a.Dk, 1, a.Tq, a.Dk, opt.query_offset, base);
            else
                rope_rotate(buf.k.data() + (s - a.B * a.H) * a.Tk * a.Dk, 1, a.Tk, a.Dk, 0, base);
        });
        a.q = buf.q.data();
        a.k = buf.k.data();
    }
    if (opt.alibi) {
        for (double m : alibi_slopes(a.H)) buf.alibi2.push_back(static_cast<float>(m) * fd::kLog2e);
        a.alibi2 = buf.alibi2.data();
    }
}

// Runs `kernel` over every (b, h, query block), each thread with its own workspace.
void run_kernel(const fd::Kernel& kernel, const fd::Args& a, int threads) {
    const int64_t nqb = (a.Tq + kernel.block_q - 1) / kernel.block_q;
    const int64_t items = a.B * a.H * nqb;
    if (items == 0) return;
    const int t = static_cast<int>(std::min<int64_t>(resolve_threads(threads), items));
    // Each thread's slice starts on a 64-byte line and is padded to whole lines.
    const size_t per = (kernel.workspace_floats(a) + 15) / 16 * 16;
    std::unique_ptr<float[]> raw(new float[per * static_cast<size_t>(t) + 16]);
    float* base = raw.get();
    while (reinterpret_cast<uintptr_t>(base) % 64 != 0) ++base;
    parallel_for(items, t,
                 [&](int64_t item, int tid) { kernel.run_item(a, item, base + per * static_cast<size_t>(tid)); });
}

}  // namespace

bool fd::cpu_avx512() { return cpu_has_avx512(); }
bool fd::cpu_avx2() { return cpu_has_avx2(); }
bool fd::cpu_neon() { return cpu_has_neon(); }

std::vector<std::string> flash_kernels() {
    std::vector<std::string> names;
    for (const fd::Kernel* k : available()) names.emplace_back(k->name);
    return names;
}

// The short-queries variant when every query fits one of its blocks, else the long-keys
// variant when one head's K and V outgrow the caches, else k itself.
const fd::Kernel* for_size(const fd::Kernel* k, const fd::Args& a) {
    if (k->short_queries != nullptr && a.Tq <= k->short_queries->block_q) return k->short_queries;
    // A sparse band (a sliding window) visits only the keys near its block's queries:
    // those, not Tk, are what must stay in cache.
    int64_t keys = a.Tk;
    if (a.mask->is_sparse()) {
        const MaskRow r = a.mask->row(0, a.Tk);
        if (r.band_only()) keys = std::min<int64_t>(a.Tk, r.before + r.after + 1);
    }
    const double kv_bytes = 4.0 * static_cast<double>(keys) * static_cast<double>(a.Dk + a.Dv);
    return k->long_keys != nullptr && kv_bytes > fd::kLongKeysBytes ? k->long_keys : k;
}

Tensor attention_flash_with(std::string_view kernel, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Mask& mask, const AttentionOptions& opt, int threads, Tensor* lse) {
    const fd::Kernel* kern = find_kernel(kernel);
    fd::Args a = make_args(q, k, v, mask, opt);
    if (kernel == "auto") kern = for_size(kern, a);
    Tensor out({a.B, a.H, a.Tq, a.Dv});  // (B, H, Tq, Dv)
    a.q = q.ptr(), a.k = k.ptr(), a.v = v.ptr(), a.out = out.ptr();
    ScoreBuffers buf;
    apply_score_options(a, opt, buf, threads);
    if (lse != nullptr) {
        *lse = Tensor({a.B, a.H, a.Tq});  // (B, H, Tq)
        a.lse = lse->ptr();
    }
    run_kernel(*kern, a, threads);
    return out;
}

Tensor attention_flash(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                       const AttentionOptions& opt, int threads) {
    return attention_flash_with("auto", q, k, v, mask, opt, threads);
}

namespace {
// The kernel behind each bf16 path but amx (which packs its own operands).
const fd::Kernel* bf16_kernel(std::string_view path) {
    if (path == "avx512-bf16") return fd::avx512_bf16_kernel();
    if (path == "avx512") return fd::avx512_rounded_kernel();
    if (path == "avx2") return fd::avx2_rounded_kernel();
    if (path == "neon") return fd::neon_rounded_kernel();
    return fd::generic_rounded_kernel();
}

// Room for n floats (uninitialised) for the rounded copies of K and V. Up to kKeepBytes the
// calling thread keeps it for its next call: memory new at every call costs a page fault
// per 4 KiB, and at T 4096 (16 MiB of copies) those faults cost about 5% of a causal call
// at 2 threads (AVX2 path, bf16 / fp32 in wall time: 0.91 -> 0.94 with the room kept).
// Larger copies get room of their own, freed when the call ends.
constexpr size_t kKeepBytes = size_t{64} << 20;
float* rounded_copies(size_t n, std::unique_ptr<float[]>& own) {
    thread_local std::unique_ptr<float[]> kept;
    thread_local size_t kept_n = 0;
    if (n * sizeof(float) > kKeepBytes) {
        own.reset(new float[n]);
        return own.get();
    }
    if (kept_n < n) {
        kept.reset();  // the old room goes first, so the two are never held at once
        kept.reset(new float[n]);
        kept_n = n;
    }
    return kept.get();
}
}  // namespace

std::vector<std::string> flash_bf16_paths() {
    std::vector<std::string> paths;
    if (fd::avx512_bf16_kernel() != nullptr && cpu_has_avx512_bf16()) {
        if (cpu_amx_bf16_usable()) paths.emplace_back("amx");
        paths.emplace_back("avx512-bf16");
    }
    if (fd::avx512_rounded_kernel() != nullptr && cpu_has_avx512()) paths.emplace_back("avx512");
    if (fd::avx2_rounded_kernel() != nullptr && cpu_has_avx2()) paths.emplace_back("avx2");
    if (fd::neon_rounded_kernel() != nullptr && cpu_has_neon()) paths.emplace_back("neon");
    paths.emplace_back("generic");  // plain C++: every CPU
    return paths;
}

std::string flash_bf16_path() {
    const std::vector<std::string> paths = flash_bf16_paths();
    return paths.empty() ? "none" : paths.front();
}

bool flash_bf16_supported() { return !flash_bf16_paths().empty(); }

Tensor attention_flash_bf16_with(std::string_view path, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Mask& mask, const AttentionOptions& opt, int threads) {
    const std::vector<std::string> paths = flash_bf16_paths();
    if (path != "auto" && std::find(paths.begin(), paths.end(), path) == paths.end()) {
        std::string names;
        for (const std::string& p : paths) names += (names.empty() ? "" : ", ") + p;
        throw InputError("unknown bf16 flash path '" + std::string(path) +
                         "': must be auto or one of this CPU's paths (" + names + ")");
    }
    const std::string use = path == "auto" ? paths.front() : std::string(path);
    fd::Args a = make_args(q, k, v, mask, opt);
    refuse_score_options("flash-bf16", q, k, opt);
    Tensor out({a.B, a.H, a.Tq, a.Dv});  // (B, H, Tq, Dv)
    a.q = q.ptr(), a.k = k.ptr(), a.v = v.ptr(), a.out = out.ptr();
    if (use == "amx") {
        fd::run_amx_bf16(a, threads);  // packs K and V itself, in the tile layout
        return out;
    }
    if (use != "avx512-bf16") {
        // pass 0 of the paths without a bf16 instruction: K and V rounded to bf16 values,
        // kept as float32 in their own layout (fd::avx512_rounded_kernel), in chunks on every
        // thread.
        const int64_t nk = static_cast<int64_t>(k.data.size()), nv = static_cast<int64_t>(v.data.size());
        std::unique_ptr<float[]> own;
        float* const kr = rounded_copies(static_cast<size_t>(nk + nv), own);
        float* const vr = kr + nk;
        constexpr int64_t kChunk = int64_t{1} << 16;
        const int64_t ck = (nk + kChunk - 1) / kChunk, cv = (nv + kChunk - 1) / kChunk;
        parallel_for(ck + cv, threads, [&](int64_t c, int) {
            const bool is_k = c < ck;
            const int64_t i0 = (is_k ? c : c - ck) * kChunk, n = std::min(kChunk, (is_k ? nk : nv) - i0);
            const float* src = (is_k ? k.data.data() : v.data.data()) + i0;
            float* dst = (is_k ? kr : vr) + i0;
            for (int64_t i = 0; i < n; ++i) dst[i] = fd::bf16_value(src[i]);
        });
        a.k = kr;
        a.v = vr;
        run_kernel(*for_size(bf16_kernel(use), a), a, threads);
        return out;
    }
    // pass 0: K and V to bf16 once (the kernels read them T/64 times each):
    // K (B, H, Tk, Dk2) rows padded to even Dk, V (B, H, ceil(Tk/2), Dv, 2) as
    // pairs of consecutive keys, the operand layout of vdpbf16ps.
    const int64_t Dk2 = (a.Dk + 1) / 2 * 2, Tk2 = (a.Tk + 1) / 2;
    std::vector<uint16_t> kb(static_cast<size_t>(a.B * a.H * a.Tk * Dk2));
    std::vector<uint16_t> vb(static_cast<size_t>(a.B * a.H * Tk2 * a.Dv * 2));
    const int64_t BH = a.B * a.H;
    parallel_for(BH, threads, [&](int64_t bh, int) {
        const float* ks = a.k + bh * a.Tk * a.Dk;
        uint16_t* kd = kb.data() + bh * a.Tk * Dk2;
        for (int64_t j = 0; j < a.Tk; ++j)
            for (int64_t d = 0; d < Dk2; ++d) kd[j * Dk2 + d] = d < a.Dk ? fd::to_bf16(ks[j * a.Dk + d]) : 0;
        const float* vs = a.v + bh * a.Tk * a.Dv;
        uint16_t* vd = vb.data() + bh * Tk2 * a.Dv * 2;
        for (int64_t jp = 0; jp < Tk2; ++jp)
            for (int64_t e = 0; e < a.Dv; ++e)
                for (int64_t u = 0; u < 2; ++u) {
                    const int64_t j = 2 * jp + u;
                    vd[(jp * a.Dv + e) * 2 + u] = j < a.Tk ? fd::to_bf16(vs[j * a.Dv + e]) : 0;
                }
    });
    a.kb = kb.data();
    a.vb = vb.data();
    run_kernel(*for_size(bf16_kernel(use), a), a, threads);
    return out;
}

Tensor attention_flash_bf16(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                            const AttentionOptions& opt, int threads) {
    return attention_flash_bf16_with("auto", q, k, v, mask, opt, threads);
}

}  // namespace attn
