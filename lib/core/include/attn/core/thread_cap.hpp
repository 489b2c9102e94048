// attn/core/thread_cap.hpp: a process-wide bound on the threads of every parallel_for
// (attn/core/parallel.hpp), so a program's one --threads option reaches every library call
// below it, those that take no thread count of their own included (`attn forward --threads 1`).
// The numbers do not depend on it: every item computes the same at any thread count.
#pragma once

namespace attn {

// At most `threads` threads (the caller's included) in each parallel_for from now on; 0 lifts
// the bound. A call nested in another's items, or made while another thread holds the pool,
// starts threads of its own and is not bounded.
void set_thread_cap(int threads);
int thread_cap();  // 0: none

}  // namespace attn
