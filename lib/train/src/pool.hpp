// A persistent worker pool for the fast training ops: parallel_for of attn/core/parallel.hpp
// starts and joins threads on every call, which costs more than a small GEMM; a training
// step makes ~50 such calls. Same contract: fn(i, thread_id) for i in [0, n), items handed
// out dynamically, so results depend only on how work is cut into items, never on which
// thread runs an item. One run at a time (a mutex), so two models may share it.
#pragma once

#include <cstdint>
#include <functional>

namespace attn::train::detail {

void pool_for(int64_t n, int threads, const std::function<void(int64_t, int)>& fn);

}  // namespace attn::train::detail
