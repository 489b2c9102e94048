// The training path's attention in double precision (training_attention_impl.hpp), for the tests'
// finite-difference checks: attn_cpu_f64 (lib/cpu/f64), which the library does not ship.
#include "train_attention/training_attention_impl.hpp"

namespace attn::cpu {

template void training_attention_forward<double>(double*, double*, const double*, const double*, const double*,
                                                 int64_t, int64_t, int64_t, int64_t, int64_t, double, bool, float,
                                                 uint64_t, int, gemm::StridedFn, int64_t, int64_t, int64_t);
template void training_attention_backward<double>(double*, double*, double*, const double*, const double*,
                                                  const double*, const double*, const double*, int64_t, int64_t,
                                                  int64_t, int64_t, int64_t, double, float, uint64_t, int,
                                                  gemm::StridedFn, int64_t, int64_t, bool, int64_t);

}  // namespace attn::cpu
