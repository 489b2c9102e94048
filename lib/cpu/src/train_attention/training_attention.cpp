// lib/cpu/src/train_attention/training_attention.cpp: the training path's attention
// (training_attention_impl.hpp) in float32, the library's instance.
#include "train_attention/training_attention_impl.hpp"

namespace attn::cpu {

template void training_attention_forward<float>(float*, float*, const float*, const float*, const float*, int64_t,
                                                int64_t, int64_t, int64_t, int64_t, float, bool, float, uint64_t, int,
                                                gemm::StridedFn, int64_t, int64_t, int64_t);
template void training_attention_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                                 const float*, const float*, int64_t, int64_t, int64_t, int64_t,
                                                 int64_t, float, float, uint64_t, int, gemm::StridedFn, int64_t,
                                                 int64_t, bool, int64_t);

}  // namespace attn::cpu
