// attn/nn/backend.hpp: every implementation of scaled dot-product attention in
// one table, and the one entry point that runs any of them.
//
//   name              device  records  precision  what it is
//   reference         cpu     yes      fp32       the readable CPU reference (attn/core/attention.hpp)
//   flash             cpu     no       fp32       tiled, online softmax, best ISA kernel (attn/cpu/flash.hpp)
//   flash-bf16        cpu     no       bf16       the same with bf16 operands (any AVX2 CPU)
//   cuda-naive        cuda    yes      fp32       cuBLAS + fused softmax kernel (attn/cuda/cuda.hpp)
//   cuda-flash        cuda    no       fp32       FlashAttention in float32
//   cuda-flash-f16    cuda    no       fp16       tensor cores, fp16 inputs
//   cuda-flash-bf16   cuda    no       bf16       tensor cores, bf16 inputs
//
// "records": the backend forms every (B, H, Tq, Tk) intermediate and can hand
// it back (AttentionRecord); the others never hold the score matrix.
// Everything that chooses an implementation (attn forward --impl, attn bench
// --impl, MultiHeadAttention, the lessons, the parity tests) reads this table:
// valid names, availability and the reason a backend cannot run here all come
// from it, so adding a backend is adding one row.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/attention.hpp"
#include "attn/core/attention_backward.hpp"
#include "attn/cuda/cuda.hpp"

namespace attn {

enum class Backend { Reference, Flash, FlashBf16, CudaNaive, CudaFlash, CudaFlashF16, CudaFlashBf16 };
enum class Device { Cpu, Cuda };
// The narrowest type the products are computed in (accumulation is float32 in all).
enum class Precision { F32, BF16, F16 };

// q (B, H, Tq, Dk), k (B, H, Tk, Dk), v (B, H, Tk, Dv) -> (B, H, Tq, Dv).
// rec is only ever non-null for backends that record. threads = 0: all (CPU backends).
using AttentionFn = Tensor (*)(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                               const AttentionOptions& opt, AttentionRecord* rec, int threads);

// The backward pass: dout (B, H, Tq, Dv) -> dq, dk, dv (attn/core/attention_backward.hpp).
// rec may be null; a backend that does not form the (Tq, Tk) gradients leaves it untouched
// only if it is null (attention_backward refuses a rec for such a backend).
using AttentionBackwardFn = AttentionGrads (*)(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                               const AttentionOptions& opt, const Tensor& dout,
                                               AttentionBackwardRecord* rec, int threads);

struct BackendInfo {
    Backend id;
    const char* name;      // "flash-bf16": what --impl takes
    Device device;
    bool records;          // can fill an AttentionRecord
    Precision precision;
    const char* summary;   // a few words for --help
    // True when this build and this machine can run it; otherwise false and
    // *why (when given) says why in one line ("this build has no CUDA backend ...").
    bool (*available)(std::string* why);
    AttentionFn run;
    // For the GPU rows: the CUDA module's kernel (its cudaEvent timing, attn/cuda/cuda.hpp).
    CudaKernel cuda_kernel;
    // The backward pass, or nullptr when this backend has none.
    AttentionBackwardFn backward = nullptr;
    // The backward can fill an AttentionBackwardRecord (the (B, H, Tq, Tk) gradients).
    bool backward_records = false;
    // The forward implements grouped-query heads, RoPE, ALiBi, softcap and a query
    // offset (AttentionOptions); attention() refuses them for the others.
    bool score_options = false;
    // The backward implements them too.
    bool backward_score_options = false;
};

// The table, one row per Backend, in the order above.
const std::vector<BackendInfo>& backends();
const BackendInfo& backend_info(Backend b);
const char* backend_name(Backend b);
const char* device_name(Device d);           // "cpu" | "cuda"
const char* precision_name(Precision p);     // "fp32" | "bf16" | "fp16"
// The backend called `name`, or nothing.
std::optional<Backend> find_backend(std::string_view name);
// "reference, flash, flash-bf16, cuda-naive, ...": for messages that list the choices;
// with recording_only, the backends that record ("reference, cuda-naive").
std::string backend_names(bool recording_only = false);
// "reference, flash": the backends whose forward implements the score options
// (grouped-query heads, RoPE, ALiBi, softcap).
std::string score_option_backend_names();
// "reference, ...": the backends with a backward pass (and, with recording_only,
// those whose backward fills an AttentionBackwardRecord).
std::string backward_backend_names(bool recording_only = false);

// True when backend b can run here; otherwise *why says why.
bool backend_available(Backend b, std::string* why = nullptr);

// Scaled dot-product attention on backend b, as attention_reference computes it
// (within the backend's precision). Throws InputError when b cannot run here
// (the reason from the table) or when rec is given to a backend that does not
// record or when the inputs use a score option b lacks (BackendInfo::score_options);
// ShapeError on shapes that do not fit (the same check for every backend).
Tensor attention(Backend b, const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                 const AttentionOptions& opt, AttentionRecord* rec = nullptr, int threads = 0);

// The backward pass of attention on backend b: dq, dk, dv for the upstream
// gradient dout (B, H, Tq, Dv), as attention_backward_reference computes them
// (within the backend's precision). Throws InputError when b cannot run here,
// when it has no backward pass ("<name> has no backward pass (backends with
// one: reference, ...)"), or when rec is given to a backward that does not
// record; ShapeError on shapes that do not fit.
AttentionGrads attention_backward(Backend b, const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                                  const AttentionOptions& opt, const Tensor& dout,
                                  AttentionBackwardRecord* rec = nullptr, int threads = 0);

}  // namespace attn
