// nn.Linear: y = x W^T + b with W stored [out, in] (C7).
#include "attn/core/linear.hpp"

#include <algorithm>

#include <Eigen/Core>
#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

template <class T>
void linear_forward(T* out, const T* x, const T* W, const T* b, int64_t N, int64_t in_f, int64_t out_f) {
    // out (N, out_f) = x (N, in_f) . W (out_f, in_f)^T + b (out_f)
    using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using Row = Eigen::Matrix<T, 1, Eigen::Dynamic>;
    Eigen::Map<Mat> y(out, N, out_f);
    Eigen::Map<const Mat> xm(x, N, in_f);
    Eigen::Map<const Mat> wm(W, out_f, in_f);
    y.noalias() = xm * wm.transpose();
    if (b != nullptr) y.rowwise() += Eigen::Map<const Row>(b, out_f);
}
template void linear_forward<float>(float*, const float*, const float*, const float*, int64_t, int64_t, int64_t);
template void linear_forward<double>(double*, const double*, const double*, const double*, int64_t, int64_t,
                                     int64_t);

template <class T>
void linear_backward(T* dx, T* dW, T* db, const T* dy, const T* x, const T* W, int64_t N, int64_t in_f,
                     int64_t out_f) {
    // dy (N, out_f), x (N, in_f), W (out_f, in_f); accumulates into dx (N, in_f), dW (out_f, in_f), db (out_f)
    using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<const Mat> dym(dy, N, out_f);
    if (dx != nullptr) Eigen::Map<Mat>(dx, N, in_f).noalias() += dym * Eigen::Map<const Mat>(W, out_f, in_f);  // dy·W
    if (dW != nullptr)
        Eigen::Map<Mat>(dW, out_f, in_f).noalias() += dym.transpose() * Eigen::Map<const Mat>(x, N, in_f);  // dyᵀ·x
    // Σ_n dy, row after row: each column is summed in the order n = 0, 1, ..., N-1 on every
    // CPU. Eigen's colwise().sum() splits the columns between a packet path and a scalar
    // path at a point set by db's address and the packet width, and the two paths add the
    // rows in different orders: the same dy then gave bias gradients that differed in the
    // last bit between two runs on an AVX2 CPU (the buffers landed on other 32-byte
    // boundaries). The compiler still vectorises this loop across the columns.
    if (db != nullptr)
        for (int64_t n = 0; n < N; ++n) {
            const T* row = dy + n * out_f;
            for (int64_t j = 0; j < out_f; ++j) db[j] += row[j];
        }
}
template void linear_backward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t,
                                     int64_t, int64_t);
template void linear_backward<double>(double*, double*, double*, const double*, const double*, const double*,
                                      int64_t, int64_t, int64_t);

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

Linear::Grads Linear::backward(const Tensor& x, const Tensor& dy) const {
    // x (..., in), dy (..., out) -> dx (..., in), dW (out, in), db (out)
    if (x.rank() < 1 || x.dim(-1) != in_features() || dy.rank() != x.rank() || dy.dim(-1) != out_features() ||
        dy.numel() / std::max<int64_t>(out_features(), 1) != x.numel() / std::max<int64_t>(in_features(), 1))
        throw ShapeError(fmt::format("Linear({} -> {}) backward: input {} and gradient {} do not fit", in_features(),
                                     out_features(), shape_str(x.shape), shape_str(dy.shape)));
    Grads g{Tensor(x.shape), Tensor(W.shape), has_bias() ? Tensor(b.shape) : Tensor()};
    const int64_t N = in_features() == 0 ? 0 : x.numel() / in_features();
    linear_backward(g.dx.ptr(), g.dW.ptr(), has_bias() ? g.db.ptr() : nullptr, dy.ptr(), x.ptr(), W.ptr(), N,
                    in_features(), out_features());
    return g;
}

}  // namespace attn
