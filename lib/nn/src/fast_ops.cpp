// The fast ops (fast_ops_impl.hpp) in float32, the library's instance.
#include "fast_ops_impl.hpp"

namespace attn::nn {

ATTN_TRAIN_FAST_INSTANTIATE(float)

}  // namespace attn::nn
