// nn.Linear: y = x W^T + b with W stored [out, in] (C7).
#include "attn/core/linear.hpp"

#include <Eigen/Core>
#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

using MatRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecRow = Eigen::Matrix<float, 1, Eigen::Dynamic>;

void linear_forward(float* out, const float* x, const float* W, const float* b, int64_t N, int64_t in_f,
                    int64_t out_f) {
    // out (N, out_f) = x (N, in_f) . W (out_f, in_f)^T + b (out_f)
    Eigen::Map<MatRM> y(out, N, out_f);
    Eigen::Map<const MatRM> xm(x, N, in_f);
    Eigen::Map<const MatRM> wm(W, out_f, in_f);
    y.noalias() = xm * wm.transpose();
    if (b != nullptr) y.rowwise() += Eigen::Map<const VecRow>(b, out_f);
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : W(Shape{out_features, in_features}), b(bias ? Tensor(Shape{out_features}) : Tensor()) {}

Tensor Linear::forward(const Tensor& x) const {
    // x (..., in) -> (..., out)
    if (x.rank() < 1 || x.dim(-1) != in_features())
        throw ShapeError(fmt::format("Linear({} -> {}): input {} must end in {} (x·Wᵀ needs x's last dim = W's in)",
                                     in_features(), out_features(), shape_str(x.shape), in_features()));
    Shape os = x.shape;
    os.back() = out_features();
    Tensor y(os);
    const int64_t N = x.numel() / std::max<int64_t>(in_features(), 1);
    linear_forward(y.ptr(), x.ptr(), W.ptr(), has_bias() ? b.ptr() : nullptr, in_features() == 0 ? 0 : N,
                   in_features(), out_features());
    return y;
}

}  // namespace attn
