// attn/cpu/linear_attention_f64.hpp: one head of linear attention in double precision, for the
// tests' finite-difference checks. Test support: in attn_cpu_f64 (lib/cpu/f64), which the tests
// link and the library does not ship.
#pragma once

#include <cstdint>
#include <vector>

#include "attn/cpu/linear_attention.hpp"

namespace attn {

// One head in double precision, for finite-difference checks: q, k [T, Dk], v [T, Dv]
// row-major; returns out [T, Dv] (explicit = the O(T²) form), or the gradients.
std::vector<double> linear_head_f64(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, int64_t T, int64_t Dk, int64_t Dv,
                                    const LinearOptions& opt, bool explicit_form);
void linear_head_backward_f64(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, int64_t T, int64_t Dk, int64_t Dv,
                              const LinearOptions& opt, const std::vector<double>& dout, std::vector<double>& dq,
                              std::vector<double>& dk, std::vector<double>& dv);

}  // namespace attn
