// The fast ops in double precision (fast_ops_impl.hpp), for the tests'
// finite-difference checks: attn_nn_f64 (lib/nn/f64), which the library does not ship.
#include "fast_ops_impl.hpp"

namespace attn::nn {

ATTN_TRAIN_FAST_INSTANTIATE(double)

}  // namespace attn::nn
