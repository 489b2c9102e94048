// lib/cuda/gpu/attention_cuda.cpp: the host side of the CUDA backend (attn/cuda/cuda.hpp):
// device checks, checked inputs, uploads, the readable path's cuBLAS calls, the
// kernel dispatch, copies back into AttentionRecord, timing and the benchmark.
#include "attn/cuda/cuda.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>
#ifdef ATTN_CUDA_CUBLAS
#include <cublas_v2.h>
#endif

#include "attn/core/cost.hpp"
#include "attn/core/errors.hpp"
#include "cuda_internal.hpp"

namespace attn {
namespace cuda_detail {

void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line) {
    if (e == cudaErrorMemoryAllocation)
        throw InputError(fmt::format("the GPU is out of memory ({}); try smaller sizes", what));
    throw std::runtime_error(fmt::format("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(e),
                                         cudaGetErrorString(e), what, file, line));
}

// GPU memory that frees itself. Allocation failure is an InputError naming the size.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t bytes, const char* what) { alloc(bytes, what); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            if (p_ != nullptr) cudaFree(p_);
            p_ = o.p_, n_ = o.n_;
            o.p_ = nullptr, o.n_ = 0;
        }
        return *this;
    }
    ~DeviceBuffer() {
        if (p_ != nullptr) cudaFree(p_);
    }
    void alloc(size_t bytes, const char* what) {
        if (bytes == 0) return;
        const cudaError_t e = cudaMalloc(&p_, bytes);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            throw InputError(fmt::format("the GPU has no room for {} ({:.2f} GiB)", what,
                                         static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0)));
        }
        ATTN_CUDA_CHECK(e);
        n_ = bytes;
    }
    template <class T = void>
    T* get() const { return static_cast<T*>(p_); }
    size_t bytes() const { return n_; }

private:
    void* p_ = nullptr;
    size_t n_ = 0;
};

template <class T>
static DeviceBuffer upload(const T* src, size_t n, const char* what) {
    DeviceBuffer d(n * sizeof(T), what);
    if (n > 0) ATTN_CUDA_CHECK(cudaMemcpy(d.get(), src, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

static void download(float* dst, const DeviceBuffer& src, size_t n) {
    if (n > 0) ATTN_CUDA_CHECK(cudaMemcpy(dst, src.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
}

// cudaEvent pair for timing the default stream.
struct EventTimer {
    cudaEvent_t a{}, b{};
    EventTimer() {
        ATTN_CUDA_CHECK(cudaEventCreate(&a));
        ATTN_CUDA_CHECK(cudaEventCreate(&b));
    }
    ~EventTimer() {
        cudaEventDestroy(a);
        cudaEventDestroy(b);
    }
    EventTimer(const EventTimer&) = delete;
    EventTimer& operator=(const EventTimer&) = delete;
    void start() { ATTN_CUDA_CHECK(cudaEventRecord(a, 0)); }
    double stop_ms() {
        ATTN_CUDA_CHECK(cudaEventRecord(b, 0));
        ATTN_CUDA_CHECK(cudaEventSynchronize(b));
        float ms = 0;
        ATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        return ms;
    }
};

#ifdef ATTN_CUDA_CUBLAS
static const char* cublas_text(cublasStatus_t s) { return cublasGetStatusString(s); }
#define ATTN_CUBLAS_CHECK(call)                                                                          \
    do {                                                                                                 \
        const cublasStatus_t st_ = (call);                                                               \
        if (st_ == CUBLAS_STATUS_ALLOC_FAILED)                                                           \
            throw InputError("the GPU is out of memory (cuBLAS)");                        \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                                \
            throw std::runtime_error(fmt::format("cuBLAS error {} in {} at {}:{}", cublas_text(st_), #call, \
                                                 __FILE__, __LINE__));                                   \
    } while (0)

// One handle for the process, made on first use (creating one costs milliseconds).
static cublasHandle_t cublas() {
    static std::once_flag once;
    static cublasHandle_t handle = nullptr;
    std::call_once(once, [] {
        ATTN_CUBLAS_CHECK(cublasCreate(&handle));
        // plain float32 products: no TF32, so the GPU agrees with the CPU to float rounding
        ATTN_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    });
    return handle;
}
#endif

static std::atomic<bool> g_force_tiled{false};
void force_tiled_gemm(bool on) { g_force_tiled = on; }
bool tiled_gemm_forced() { return g_force_tiled; }

// Scores (BH, Tq, Tk) = Q Kᵀ. Row-major X is column-major Xᵀ, so cuBLAS computes
// Sᵀ (Tk x Tq, column-major) = K (Tk x Dk) · Qᵀ (Dk x Tq).
static void scores_qk(const float* q, const float* k, float* s, const AttnArgs& a) {
    if (a.Dk == 0) {  // empty dot products (and cuBLAS rejects a leading dimension of 0)
        ATTN_CUDA_CHECK(cudaMemset(s, 0, static_cast<size_t>(a.B * a.H * a.Tq * a.Tk) * sizeof(float)));
        return;
    }
#ifdef ATTN_CUDA_CUBLAS
    if (tiled_gemm_forced()) return launch_gemm_qk(q, k, s, a, 0);
    const float one = 1.0f, zero = 0.0f;
    ATTN_CUBLAS_CHECK(cublasSgemmStridedBatched(
        cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(a.Tk), static_cast<int>(a.Tq), static_cast<int>(a.Dk),
        &one, k, static_cast<int>(a.Dk), a.Tk * a.Dk, q, static_cast<int>(a.Dk), a.Tq * a.Dk, &zero, s,
        static_cast<int>(a.Tk), a.Tq * a.Tk, static_cast<int>(a.B * a.H)));
#else
    launch_gemm_qk(q, k, s, a, 0);
#endif
}

// out (BH, Tq, Dv) = W (Tq x Tk) · V (Tk x Dv); column-major: outᵀ = Vᵀ · Wᵀ.
static void weighted_sum(const float* w, const float* v, float* out, const AttnArgs& a) {
#ifdef ATTN_CUDA_CUBLAS
    if (tiled_gemm_forced()) return launch_gemm_pv(w, v, out, a, 0);
    const float one = 1.0f, zero = 0.0f;
    ATTN_CUBLAS_CHECK(cublasSgemmStridedBatched(
        cublas(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(a.Dv), static_cast<int>(a.Tq), static_cast<int>(a.Tk),
        &one, v, static_cast<int>(a.Dv), a.Tk * a.Dv, w, static_cast<int>(a.Tk), a.Tq * a.Tk, &zero, out,
        static_cast<int>(a.Dv), a.Tq * a.Dv, static_cast<int>(a.B * a.H)));
#else
    launch_gemm_pv(w, v, out, a, 0);
#endif
}

// The inputs on the GPU, checked, in the form the chosen kernel reads.
struct Prepared {
    AttnArgs a;
    CudaKernel kernel = CudaKernel::Naive;
    DeviceBuffer q, k, v;          // float32, or 16-bit for the tensor-core kernels
    DeviceBuffer dense, additive, mask_rows;  // mask_rows: [B] MaskRow pointing into dense and additive
    DeviceBuffer out;              // (BH, Tq, Dv) float32
    DeviceBuffer scores;           // naive only: (BH, Tq, Tk), softmax in place
    int64_t out_n = 0, score_n = 0;
    bool empty = false;            // nothing to compute (a zero dimension)
};

static void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                         const AttentionOptions& opt, CudaKernel kernel) {
    // the same rules as attention_reference, then the GPU's own limits
    check_attention_inputs(q, k, v, mask, opt);
    refuse_score_options(cuda_kernel_name(kernel), q, k, opt);
    cuda_check_mask(kernel, mask);             // one mask row per batch row on the GPU: no per-head mask
    mask.check(q.dim(0), 1, q.dim(2), k.dim(2));
    const int64_t BH = q.dim(0) * q.dim(1), d = std::max(q.dim(3), v.dim(3));
    const char* name = cuda_kernel_name(kernel);
    if (BH > 65535) throw InputError(fmt::format("{}: B·H must be at most 65535 on the GPU, got {}", name, BH));
    const int64_t int_max = std::numeric_limits<int>::max();
    if (kernel == CudaKernel::Naive && (q.dim(2) > int_max || k.dim(2) > int_max || d > int_max))
        throw InputError(fmt::format("{}: sequence and head sizes must fit in 32 bits", name));
    if (kernel == CudaKernel::Flash && d > cuda_detail::flash_f32_max_d())
        throw InputError(
            fmt::format("{}: Dk and Dv must be at most {}, got {}", name, cuda_detail::flash_f32_max_d(), d));
    if ((kernel == CudaKernel::FlashF16 || kernel == CudaKernel::FlashBf16) && d > cuda_detail::flash_mma_max_d())
        throw InputError(
            fmt::format("{}: Dk and Dv must be at most {}, got {}", name, cuda_detail::flash_mma_max_d(), d));
}

static void prepare(Prepared& p, const Tensor& q_in, const Tensor& k_in, const Tensor& v, const Mask& mask,
                    const AttentionOptions& opt, CudaKernel kernel, bool want_record) {
    check_inputs(q_in, k_in, v, mask, opt, kernel);
    require_cuda();
    AttnArgs& a = p.a;
    a.B = q_in.dim(0), a.H = q_in.dim(1), a.Tq = q_in.dim(2), a.Tk = k_in.dim(2);
    a.Dk = q_in.dim(3), a.Dv = v.dim(3);
    a.scale = opt.scale.factor(a.Dk);
    a.fill = opt.fill;
    const bool dropping = opt.train && opt.dropout > 0.0f;
    a.dropout = dropping ? opt.dropout : 0.0f;
    a.keep_scale = dropping ? 1.0f / (1.0f - opt.dropout) : 1.0f;
    a.seed = opt.seed;
    p.kernel = kernel;
    p.out_n = a.B * a.H * a.Tq * a.Dv;
    p.score_n = a.B * a.H * a.Tq * a.Tk;
    p.empty = p.out_n == 0 && (!want_record || p.score_n == 0);
    if (p.empty) return;

    // the cosine scale normalises q and k first (reference: l2_normalize_rows)
    const bool cosine = opt.scale.kind == ScaleKind::Cosine;
    Tensor qn, kn;
    if (cosine) {
        qn = q_in;
        kn = k_in;
        l2_normalize_rows(qn.ptr(), a.B * a.H * a.Tq, a.Dk);
        l2_normalize_rows(kn.ptr(), a.B * a.H * a.Tk, a.Dk);
    }
    const Tensor& q = cosine ? qn : q_in;
    const Tensor& k = cosine ? kn : k_in;

    const bool half = kernel == CudaKernel::FlashF16 || kernel == CudaKernel::FlashBf16;
    if (!half) {
        p.q = upload(q.ptr(), static_cast<size_t>(q.numel()), "Q");
        p.k = upload(k.ptr(), static_cast<size_t>(k.numel()), "K");
        p.v = upload(v.ptr(), static_cast<size_t>(v.numel()), "V");
    } else {
        // float32 staging buffer, rounded on the GPU into the 16-bit copies
        const Half h = kernel == CudaKernel::FlashF16 ? Half::F16 : Half::Bf16;
        const Tensor* src[3] = {&q, &k, &v};
        DeviceBuffer* dst[3] = {&p.q, &p.k, &p.v};
        const char* names[3] = {"Q", "K", "V"};
        for (int x = 0; x < 3; ++x) {
            const size_t n = static_cast<size_t>(src[x]->numel());
            DeviceBuffer staging = upload(src[x]->ptr(), n, names[x]);
            dst[x]->alloc(n * 2, names[x]);
            launch_to_half(h, staging.get<float>(), dst[x]->get(), static_cast<int64_t>(n), 0);
            ATTN_CUDA_CHECK(cudaDeviceSynchronize());
        }
    }
    // the mask: each part's values copied once, and one MaskRow per batch row pointing into the copies
    const std::span<const uint8_t> dense = mask.dense_values();
    const std::span<const float> additive = mask.additive_values();
    p.dense = upload(dense.data(), dense.size(), "the boolean mask");
    p.additive = upload(additive.data(), additive.size(), "the additive mask");
    std::vector<MaskRow> rows(static_cast<size_t>(a.B));
    for (int64_t b = 0; b < a.B; ++b)
        rows[static_cast<size_t>(b)] = mask.row(b, a.Tk, p.dense.get<uint8_t>(), p.additive.get<float>());
    p.mask_rows = upload(rows.data(), rows.size(), "the mask");
    a.mask = p.mask_rows.get<MaskRow>();
    p.out.alloc(static_cast<size_t>(p.out_n) * sizeof(float), "the output");
    if (kernel == CudaKernel::Naive && !want_record)
        p.scores.alloc(static_cast<size_t>(p.score_n) * sizeof(float), "the (B, H, Tq, Tk) score matrix");
}

// Device buffers of the five recorded intermediates (naive path with a record).
struct RecordBuffers {
    DeviceBuffer raw, scaled, masked, weights, dropped;
};

// One forward pass on prepared inputs; everything stays on the GPU.
static void run(Prepared& p, RecordBuffers* rb) {
    const AttnArgs& a = p.a;
    if (p.empty) return;
    if (a.Tk == 0) {
        // no keys: every row is fully masked, weights 0, output 0 (the reference's rule)
        if (p.out_n > 0) ATTN_CUDA_CHECK(cudaMemset(p.out.get(), 0, static_cast<size_t>(p.out_n) * sizeof(float)));
        return;
    }
    switch (p.kernel) {
        case CudaKernel::Naive: {
            float* raw = rb ? rb->raw.get<float>() : p.scores.get<float>();
            float* final_w = rb ? rb->dropped.get<float>() : raw;  // softmax in place without a record
            scores_qk(p.q.get<float>(), p.k.get<float>(), raw, a);
            launch_softmax_rows(raw, rb ? rb->scaled.get<float>() : nullptr, rb ? rb->masked.get<float>() : nullptr,
                                rb ? rb->weights.get<float>() : nullptr, final_w, a, 0);
            if (p.out_n > 0) weighted_sum(final_w, p.v.get<float>(), p.out.get<float>(), a);
            break;
        }
        case CudaKernel::Flash:
            launch_flash_f32(p.q.get<float>(), p.k.get<float>(), p.v.get<float>(), p.out.get<float>(), a, 0);
            break;
        case CudaKernel::FlashF16:
        case CudaKernel::FlashBf16:
            launch_flash_mma(p.kernel == CudaKernel::FlashF16 ? Half::F16 : Half::Bf16, p.q.get(), p.k.get(),
                             p.v.get(), p.out.get<float>(), a, 0);
            break;
    }
}

struct Availability {
    bool ok = false;
    std::string why;
    std::string name;
};

static const Availability& availability() {
    static const Availability av = [] {
        Availability r;
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n == 0) {
            (void)cudaGetLastError();
            if (e == cudaSuccess || e == cudaErrorNoDevice)
                r.why = "no CUDA GPU on this machine";
            else if (e == cudaErrorInsufficientDriver)
                r.why = fmt::format("no usable CUDA GPU: the NVIDIA driver is missing or older than this build's CUDA "
                                    "runtime ({}.{})", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
            else
                r.why = fmt::format("no usable CUDA GPU on this machine ({})", cudaGetErrorString(e));
            return r;
        }
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
            (void)cudaGetLastError();
            r.why = "cannot read the GPU's properties";
            return r;
        }
        r.name = fmt::format("{} (sm_{}{}, {:.1f} GiB)", prop.name, prop.major, prop.minor,
                             static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
        const cudaError_t pe = probe_kernel_image();
        if (pe != cudaSuccess) {
            (void)cudaGetLastError();
            r.why = fmt::format("this build has no code for {} ({}); rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{}",
                                r.name, cudaGetErrorString(pe), prop.major, prop.minor);
            return r;
        }
        r.ok = true;
        return r;
    }();
    return av;
}

}  // namespace cuda_detail

using namespace cuda_detail;

bool cuda_compiled() { return true; }

bool cuda_available(std::string* why) {
    const Availability& av = availability();
    if (!av.ok && why != nullptr) *why = av.why;
    return av.ok;
}

void require_cuda() {
    std::string why;
    if (!cuda_available(&why)) throw InputError(why);
}

std::string cuda_device_name() {
    require_cuda();
    return availability().name;
}

Tensor attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask, const AttentionOptions& opt,
                      CudaKernel kernel, AttentionRecord* rec, CudaTiming* timing) {
    // q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> (B, H, Tq, Dv); rec: (B, H, Tq, Tk) each
    if (rec != nullptr && kernel != CudaKernel::Naive)
        throw InputError(fmt::format("{}: the flash kernels never form the score matrix, so they cannot record "
                                     "intermediates; use cuda-naive",
                                     cuda_kernel_name(kernel)));
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    Prepared p;
    prepare(p, q, k, v, mask, opt, kernel, rec != nullptr);
    const AttnArgs& a = p.a;
    RecordBuffers rb;
    if (rec != nullptr && p.score_n > 0) {
        const size_t bytes = static_cast<size_t>(p.score_n) * sizeof(float);
        rb.raw.alloc(bytes, "the recorded raw scores");
        rb.scaled.alloc(bytes, "the recorded scaled scores");
        rb.masked.alloc(bytes, "the recorded masked scores");
        rb.weights.alloc(bytes, "the recorded weights");
        rb.dropped.alloc(bytes, "the recorded dropped weights");
    }
    ATTN_CUDA_CHECK(cudaDeviceSynchronize());
    const auto t1 = clock::now();

    EventTimer ev;
    ev.start();
    run(p, rec != nullptr && p.score_n > 0 ? &rb : nullptr);
    const double kernel_ms = ev.stop_ms();
    ATTN_CUDA_CHECK(cudaGetLastError());

    const auto t2 = clock::now();
    Tensor out(Shape{q.dim(0), q.dim(1), q.dim(2), v.dim(3)});
    download(out.ptr(), p.out, static_cast<size_t>(p.out_n));
    if (rec != nullptr) {
        const Shape s{a.B, a.H, a.Tq, a.Tk};
        rec->scores_raw = Tensor(s);
        rec->scores_scaled = Tensor(s);
        rec->scores_masked = Tensor(s);
        rec->weights = Tensor(s);
        rec->weights_dropped = Tensor(s);
        if (p.score_n > 0) {
            const size_t n = static_cast<size_t>(p.score_n);
            download(rec->scores_raw.ptr(), rb.raw, n);
            download(rec->scores_scaled.ptr(), rb.scaled, n);
            download(rec->scores_masked.ptr(), rb.masked, n);
            download(rec->weights.ptr(), rb.weights, n);
            download(rec->weights_dropped.ptr(), rb.dropped, n);
        }
    }
    const auto t3 = clock::now();
    if (timing != nullptr) {
        const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
        timing->upload_ms = ms(t1 - t0);
        timing->kernel_ms = kernel_ms;
        timing->download_ms = ms(t3 - t2);
    }
    return out;
}

CudaBenchResult bench_attention_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                     const AttentionOptions& opt, CudaKernel kernel, int reps, int warmup) {
    if (reps < 1) throw InputError(fmt::format("reps must be at least 1, got {}", reps));
    Prepared p;
    prepare(p, q, k, v, mask, opt, kernel, false);
    CudaBenchResult r;
    r.kernel = cuda_kernel_name(kernel);
    r.device = cuda_device_name();
    r.reps = reps;
    r.flops = attention_flops(p.a.B, p.a.H, p.a.Tq, p.a.Tk, p.a.Dk, p.a.Dv, mask);
    for (int w = 0; w < std::max(warmup, 0); ++w) run(p, nullptr);
    ATTN_CUDA_CHECK(cudaDeviceSynchronize());
    EventTimer ev;
    std::vector<double> ms(static_cast<size_t>(reps));
    for (auto& x : ms) {
        ev.start();
        run(p, nullptr);
        x = ev.stop_ms();
    }
    ATTN_CUDA_CHECK(cudaGetLastError());
    double sum = 0;
    for (double x : ms) sum += x;
    r.mean_ms = sum / reps;
    std::sort(ms.begin(), ms.end());
    r.min_ms = ms.front();
    r.max_ms = ms.back();
    r.median_ms = reps % 2 == 1 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
    r.tflops = r.mean_ms > 0 ? r.flops / (r.mean_ms * 1e-3) / 1e12 : 0.0;
    return r;
}

CudaComparison compare_cuda_to_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                   const AttentionOptions& opt, CudaKernel kernel) {
    CudaComparison c;
    c.kernel = cuda_kernel_name(kernel);
    c.device = cuda_device_name();
    CudaTiming tm;
    const Tensor gpu = attention_cuda(q, k, v, mask, opt, kernel, nullptr, &tm);
    c.gpu_ms = tm.kernel_ms;
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor cpu = attention_reference(q, k, v, mask, opt, nullptr);
    c.cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double err2 = 0, ref2 = 0;
    for (int64_t x = 0; x < cpu.numel(); ++x) {
        const double g = gpu.data[static_cast<size_t>(x)], r = cpu.data[static_cast<size_t>(x)];
        if (!std::isfinite(g) || !std::isfinite(r)) {
            const bool same = (std::isnan(g) && std::isnan(r)) || g == r;
            if (!same) ++c.nonfinite_mismatches;
            continue;
        }
        const double d = std::fabs(g - r);
        c.max_abs_diff = std::max(c.max_abs_diff, d);
        c.max_rel_diff = std::max(c.max_rel_diff, d / std::max(std::fabs(r), 1e-6));
        err2 += d * d;
        ref2 += r * r;
    }
    c.nmse = ref2 > 0 ? err2 / ref2 : err2;
    return c;
}

}  // namespace attn
