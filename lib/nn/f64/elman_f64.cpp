// The Elman RNN's pass in double precision (elman_impl.hpp), for the tests' finite-difference
// check: in attn_nn_f64 (lib/nn/f64), which the library does not ship.
#include "elman_impl.hpp"

namespace attn {

template RnnStats elman_pass<double>(int64_t, int64_t, const std::vector<const double*>&, const std::vector<double*>&,
                                     const int32_t*, const int32_t*, int64_t, int64_t);

}  // namespace attn
