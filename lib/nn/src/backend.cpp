// The backend table (see attn/nn/backend.hpp): one row per implementation of
// attention, and attention(), the entry that checks and dispatches on it.
#include "attn/nn/backend.hpp"

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/cpu/flash_backward.hpp"

namespace attn {
namespace {

bool always(std::string*) { return true; }

Tensor run_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                     const AttentionOptions& opt, AttentionRecord* rec, int /*threads: single-threaded*/) {
    return attention_reference(q, k, v, mask, opt, rec);
}

AttentionGrads run_reference_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                      const AttentionOptions& opt, const Tensor& dout, AttentionBackwardRecord* rec,
                                      int /*threads: single-threaded*/) {
    return attention_backward_reference(q, k, v, mask, opt, dout, rec);
}

Tensor run_flash(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask, const AttentionOptions& opt,
                 AttentionRecord*, int threads) {
    return attention_flash(q, k, v, mask, opt, threads);
}

AttentionGrads run_flash_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                  const AttentionOptions& opt, const Tensor& dout, AttentionBackwardRecord*,
                                  int threads) {
    return attention_flash_backward(q, k, v, mask, opt, dout, threads);
}

Tensor run_flash_bf16(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                      const AttentionOptions& opt, AttentionRecord*, int threads) {
    return attention_flash_bf16(q, k, v, mask, opt, threads);
}

// One function per CUDA kernel: AttentionFn is a plain pointer, so the kernel
// is a template argument rather than a capture.
template <CudaKernel K>
Tensor run_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask, const AttentionOptions& opt,
                AttentionRecord* rec, int) {
    return attention_cuda(q, k, v, mask, opt, K, rec);
}

std::vector<BackendInfo> make_table() {
    constexpr auto cpu = Device::Cpu, gpu = Device::Cuda;
    constexpr auto none = CudaKernel::Naive;  // unused on CPU rows
    return {
        {Backend::Reference, "reference", cpu, true, Precision::F32,
         "the readable CPU reference, one thread", always, run_reference, none,
         run_reference_backward, /*backward_records=*/true, /*score_options=*/true, /*backward_score_options=*/true},
        {Backend::Flash, "flash", cpu, false, Precision::F32,
         "tiled, online softmax, no (T, T) matrix", always,
         run_flash, none, run_flash_backward, /*backward_records=*/false, /*score_options=*/true},
        {Backend::FlashBf16, "flash-bf16", cpu, false, Precision::BF16,
         "flash with bf16 operands (AMX tiles, AVX-512 BF16, else float32 FMAs on operands rounded to bf16)", always,
         run_flash_bf16, none},
        {Backend::CudaNaive, cuda_kernel_name(CudaKernel::Naive), gpu, true, Precision::F32,
         "cuBLAS + one fused softmax kernel", cuda_available,
         run_cuda<CudaKernel::Naive>, CudaKernel::Naive},
        {Backend::CudaFlash, cuda_kernel_name(CudaKernel::Flash), gpu, false, Precision::F32,
         "FlashAttention in float32", cuda_available, run_cuda<CudaKernel::Flash>, CudaKernel::Flash},
        {Backend::CudaFlashF16, cuda_kernel_name(CudaKernel::FlashF16), gpu, false, Precision::F16,
         "FlashAttention on tensor cores", cuda_available, run_cuda<CudaKernel::FlashF16>,
         CudaKernel::FlashF16},
        {Backend::CudaFlashBf16, cuda_kernel_name(CudaKernel::FlashBf16), gpu, false, Precision::BF16,
         "FlashAttention on tensor cores", cuda_available, run_cuda<CudaKernel::FlashBf16>,
         CudaKernel::FlashBf16},
    };
}

}  // namespace

const std::vector<BackendInfo>& backends() {
    static const std::vector<BackendInfo> table = make_table();
    return table;
}

const BackendInfo& backend_info(Backend b) { return backends().at(static_cast<size_t>(b)); }

const char* backend_name(Backend b) { return backend_info(b).name; }

const char* device_name(Device d) { return d == Device::Cpu ? "cpu" : "cuda"; }

const char* precision_name(Precision p) {
    switch (p) {
        case Precision::F32: return "fp32";
        case Precision::BF16: return "bf16";
        case Precision::F16: return "fp16";
    }
    return "?";
}

std::optional<Backend> find_backend(std::string_view name) {
    for (const BackendInfo& row : backends())
        if (name == row.name) return row.id;
    return std::nullopt;
}

std::string backend_names(bool recording_only) {
    std::string s;
    for (const BackendInfo& row : backends())
        if (row.records || !recording_only) s += std::string(s.empty() ? "" : ", ") + row.name;
    return s;
}

std::string score_option_backend_names() {
    std::string s;
    for (const BackendInfo& row : backends())
        if (row.score_options) s += std::string(s.empty() ? "" : ", ") + row.name;
    return s;
}

std::string backward_backend_names(bool recording_only) {
    std::string s;
    for (const BackendInfo& row : backends())
        if (row.backward != nullptr && (row.backward_records || !recording_only))
            s += std::string(s.empty() ? "" : ", ") + row.name;
    return s;
}

bool backend_available(Backend b, std::string* why) { return backend_info(b).available(why); }

Tensor attention(Backend b, const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                 const AttentionOptions& opt, AttentionRecord* rec, int threads) {
    const BackendInfo& row = backend_info(b);
    std::string why;
    if (!row.available(&why)) throw InputError(fmt::format("{}: {}", row.name, why));
    if (rec != nullptr && !row.records)
        throw InputError(fmt::format("{} never forms the (Tq, Tk) intermediates; only {} can record them", row.name,
                                     backend_names(/*recording_only=*/true)));
    if (!row.score_options) {
        const std::string f = score_features(q, k, opt);
        if (!f.empty())
            throw InputError(fmt::format("{} does not implement {} (backends that do: {})", row.name, f,
                                         score_option_backend_names()));
    }
    // every implementation checks its inputs with check_attention_inputs: the same rules and words
    return row.run(q, k, v, mask, opt, rec, threads);
}

AttentionGrads attention_backward(Backend b, const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                  const AttentionOptions& opt, const Tensor& dout, AttentionBackwardRecord* rec,
                                  int threads) {
    const BackendInfo& row = backend_info(b);
    if (row.backward == nullptr)
        throw InputError(fmt::format("{} has no backward pass (backends with one: {})", row.name,
                                     backward_backend_names()));
    std::string why;
    if (!row.available(&why)) throw InputError(fmt::format("{}: {}", row.name, why));
    if (rec != nullptr && !row.backward_records)
        throw InputError(fmt::format("{}'s backward never forms the (Tq, Tk) gradients; only {} can record them",
                                     row.name, backward_backend_names(/*recording_only=*/true)));
    // every backward checks its inputs with check_attention_inputs and check_attention_dout
    return row.backward(q, k, v, mask, opt, dout, rec, threads);
}

}  // namespace attn
