// The variant attention in double precision (variant_attention_impl.hpp), for the tests'
// finite-difference checks: attn_cpu_f64 (lib/cpu/f64), which the library does not ship.
#include "train_attention/variant_attention_impl.hpp"

namespace attn::cpu {

template void variant_attention_forward<double>(double*, double*, const double*, const double*, const double*,
                                                const int32_t*, const VariantKnobs&, int64_t, int64_t, double, float,
                                                uint64_t, int);
template void variant_attention_backward<double>(double*, double*, double*, const double*, const double*,
                                                 const double*, const double*, const double*, const int32_t*,
                                                 const VariantKnobs&, int64_t, int64_t, double, float, uint64_t, int);

}  // namespace attn::cpu
