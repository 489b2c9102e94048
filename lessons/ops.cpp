// Reading-aid tensor operations for the lessons (see ops.hpp).
#include "ops.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn::lessons {

Tensor randn(Shape shape, Rng& rng, float std) {
    Tensor t(std::move(shape));
    for (auto& x : t.data) x = std * rng.normal();
    return t;
}

Tensor transpose_last2(const Tensor& t) {
    // t [..., a, b] -> out [..., b, a]
    if (t.rank() < 2) throw ShapeError(fmt::format("transpose of a rank-{} tensor {}", t.rank(), shape_str(t.shape)));
    const int64_t a = t.dim(-2), b = t.dim(-1), n = t.numel() / std::max<int64_t>(1, a * b);
    Shape s = t.shape;
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    Tensor out(s);
    for (int64_t m = 0; m < n; ++m)
        for (int64_t i = 0; i < a; ++i)
            for (int64_t j = 0; j < b; ++j)
                out.data[static_cast<size_t>(m * a * b + j * a + i)] =
                    t.data[static_cast<size_t>(m * a * b + i * b + j)];
    return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
    // a [..., n, k] @ b [..., k, m] -> [..., n, m]; batch dims broadcast as in numpy
    if (a.rank() < 2 || b.rank() < 2)
        throw ShapeError(
            fmt::format("matmul needs rank >= 2 here, got {} @ {}", shape_str(a.shape), shape_str(b.shape)));
    const int64_t n = a.dim(-2), k = a.dim(-1), k2 = b.dim(-2), m = b.dim(-1);
    if (k != k2)
        throw ShapeError(fmt::format("matmul {} @ {}: inner dimensions differ ({} vs {})", shape_str(a.shape),
                                     shape_str(b.shape), k, k2));
    // pass 1: broadcast the batch dims (aligned from the right)
    const size_t ra = a.shape.size() - 2, rb = b.shape.size() - 2, r = std::max(ra, rb);
    Shape batch(r);
    for (size_t i = 0; i < r; ++i) {
        const int64_t da = i + ra >= r ? a.shape[i + ra - r] : 1, db = i + rb >= r ? b.shape[i + rb - r] : 1;
        if (da != db && da != 1 && db != 1)
            throw ShapeError(fmt::format("matmul {} @ {}: batch dimensions {} and {} cannot broadcast",
                                         shape_str(a.shape), shape_str(b.shape), da, db));
        batch[i] = std::max(da, db);
    }
    Shape out_shape = batch;
    out_shape.push_back(n);
    out_shape.push_back(m);
    Tensor out(out_shape);
    const int64_t nb = shape_numel(batch);
    // pass 2: for each output batch index, find the (broadcast) source blocks
    for (int64_t bi = 0; bi < nb; ++bi) {
        int64_t rem = bi, ia = 0, ib = 0, sa = 1, sb = 1;
        for (size_t d = r; d-- > 0;) {
            const int64_t idx = rem % batch[d];
            rem /= batch[d];
            if (d + ra >= r) {
                const int64_t da = a.shape[d + ra - r];
                ia += (da == 1 ? 0 : idx) * sa;
                sa *= da;
            }
            if (d + rb >= r) {
                const int64_t db = b.shape[d + rb - r];
                ib += (db == 1 ? 0 : idx) * sb;
                sb *= db;
            }
        }
        const float* pa = a.ptr() + ia * n * k;
        const float* pb = b.ptr() + ib * k * m;
        float* po = out.ptr() + bi * n * m;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < m; ++j) {
                double s = 0;
                for (int64_t t = 0; t < k; ++t) s += double(pa[i * k + t]) * double(pb[t * m + j]);
                po[i * m + j] = static_cast<float>(s);
            }
    }
    return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
    if (a.rank() != 3 || b.rank() != 3)
        throw ShapeError(
            fmt::format("bmm expects two 3-D tensors, got {} and {}", shape_str(a.shape), shape_str(b.shape)));
    if (a.dim(0) != b.dim(0))
        throw ShapeError(fmt::format("bmm {} @ {}: batch sizes differ", shape_str(a.shape), shape_str(b.shape)));
    return matmul(a, b);
}

std::vector<float> block(const Tensor& t, int64_t i0, int64_t i1) {
    if (t.rank() == 4) {
        const int64_t r = t.dim(2), c = t.dim(3);
        if (i0 < 0 || i0 >= t.dim(0) || i1 < 0 || i1 >= t.dim(1))
            throw ShapeError(fmt::format("block ({}, {}) of {}", i0, i1, shape_str(t.shape)));
        const auto off = static_cast<size_t>((i0 * t.dim(1) + i1) * r * c);
        return {t.data.begin() + static_cast<std::ptrdiff_t>(off),
                t.data.begin() + static_cast<std::ptrdiff_t>(off + static_cast<size_t>(r * c))};
    }
    if (t.rank() == 3) {
        const int64_t r = t.dim(1), c = t.dim(2);
        if (i0 < 0 || i0 >= t.dim(0)) throw ShapeError(fmt::format("block {} of {}", i0, shape_str(t.shape)));
        const auto off = static_cast<size_t>(i0 * r * c);
        return {t.data.begin() + static_cast<std::ptrdiff_t>(off),
                t.data.begin() + static_cast<std::ptrdiff_t>(off + static_cast<size_t>(r * c))};
    }
    throw ShapeError(fmt::format("block of a rank-{} tensor", t.rank()));
}

std::vector<double> row_sums(const Tensor& t) {
    const int64_t n = t.dim(-1), rows = t.numel() / std::max<int64_t>(n, 1);
    std::vector<double> s(static_cast<size_t>(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) s[static_cast<size_t>(r)] += t.data[static_cast<size_t>(r * n + j)];
    return s;
}

double max_sum_error(const Tensor& t) {
    double m = 0;
    for (double s : row_sums(t)) {
        if (std::isnan(s)) return s;  // a NaN error fails every `err < tol` check
        m = std::max(m, std::fabs(s - 1.0));
    }
    return m;
}

std::vector<std::string> index_labels(int64_t n, const std::string& prefix) {
    std::vector<std::string> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
    return v;
}

}  // namespace attn::lessons
