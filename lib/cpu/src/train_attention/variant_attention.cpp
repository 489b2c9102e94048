// lib/cpu/src/train_attention/variant_attention.cpp: the variant attention
// (variant_attention_impl.hpp) in float32, the library's instance.
#include "train_attention/variant_attention_impl.hpp"

namespace attn::cpu {

template void variant_attention_forward<float>(float*, float*, const float*, const float*, const float*,
                                               const int32_t*, const VariantKnobs&, int64_t, int64_t, float, float,
                                               uint64_t, int);
template void variant_attention_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                                const float*, const float*, const int32_t*, const VariantKnobs&,
                                                int64_t, int64_t, float, float, uint64_t, int);

}  // namespace attn::cpu
