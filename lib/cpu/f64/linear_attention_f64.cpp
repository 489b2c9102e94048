// One head of linear attention in double precision (attn/cpu/linear_attention_f64.hpp), for the
// tests' finite-difference checks: the library's code (linear_heads.hpp) in attn_cpu_f64.
#include "attn/cpu/linear_attention_f64.hpp"

#include "linear/linear_heads.hpp"

namespace attn {

std::vector<double> linear_head_f64(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, int64_t T, int64_t Dk, int64_t Dv,
                                    const LinearOptions& opt, bool explicit_form) {
    std::vector<double> out(static_cast<size_t>(T * Dv));
    if (explicit_form)
        linear_heads::head_explicit<double>(q.data(), k.data(), v.data(), T, Dk, Dv, opt, out.data());
    else
        linear_heads::head_forward<double>(q.data(), k.data(), v.data(), T, Dk, Dv, opt, out.data());
    return out;
}

void linear_head_backward_f64(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, int64_t T, int64_t Dk, int64_t Dv,
                              const LinearOptions& opt, const std::vector<double>& dout, std::vector<double>& dq,
                              std::vector<double>& dk, std::vector<double>& dv) {
    dq.assign(static_cast<size_t>(T * Dk), 0.0);
    dk.assign(static_cast<size_t>(T * Dk), 0.0);
    dv.assign(static_cast<size_t>(T * Dv), 0.0);
    linear_heads::head_backward<double>(q.data(), k.data(), v.data(), T, Dk, Dv, opt, dout.data(), dq.data(),
                                        dk.data(), dv.data());
}

}  // namespace attn
