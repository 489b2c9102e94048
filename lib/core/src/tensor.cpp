// Tensor basics: shapes, element access, comparisons.
#include "attn/core/tensor.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

int64_t shape_numel(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0) throw InputError(fmt::format("shape {} has a negative dimension", shape_str(shape)));
        if (d != 0 && n > INT64_MAX / d)
            throw InputError(fmt::format("shape {} has more elements than fit in 64 bits", shape_str(shape)));
        n *= d;
    }
    return n;
}

Tensor::Tensor(Shape s, float fill) : shape(std::move(s)) {
    data.assign(static_cast<size_t>(shape_numel(shape)), fill);
}

Tensor Tensor::from(Shape s, std::vector<float> values) {
    if (shape_numel(s) != static_cast<int64_t>(values.size()))
        throw ShapeError(fmt::format("shape {} needs {} values, got {}", shape_str(s), shape_numel(s),
                                     values.size()));
    Tensor t;
    t.shape = std::move(s);
    t.data = std::move(values);
    return t;
}

int64_t Tensor::dim(int i) const {
    const int r = rank();
    const int j = i < 0 ? i + r : i;
    if (j < 0 || j >= r) throw ShapeError(fmt::format("dim({}) of a rank-{} tensor {}", i, r, shape_str(shape)));
    return shape[static_cast<size_t>(j)];
}

static size_t flat_index(const Shape& shape, std::initializer_list<int64_t> idx) {
    if (idx.size() != shape.size())
        throw ShapeError(fmt::format("index of rank {} into a tensor of shape {}", idx.size(), shape_str(shape)));
    size_t flat = 0, k = 0;
    for (int64_t i : idx) {
        const int64_t d = shape[k++];
        if (i < 0 || i >= d) throw ShapeError(fmt::format("index {} out of range for shape {}", i, shape_str(shape)));
        flat = flat * static_cast<size_t>(d) + static_cast<size_t>(i);
    }
    return flat;
}

float& Tensor::at(std::initializer_list<int64_t> idx) { return data[flat_index(shape, idx)]; }
float Tensor::at(std::initializer_list<int64_t> idx) const { return data[flat_index(shape, idx)]; }

Tensor Tensor::reshaped(Shape s) const {
    if (shape_numel(s) != numel())
        throw ShapeError(fmt::format("cannot reshape {} into {}", shape_str(shape), shape_str(s)));
    return Tensor::from(std::move(s), data);
}

static void check_same(const Tensor& a, const Tensor& b) {
    if (a.shape != b.shape)
        throw ShapeError(fmt::format("comparing tensors of shapes {} and {}", shape_str(a.shape), shape_str(b.shape)));
}

// The largest err(x, y) over the elements; non-finite elements must match exactly (the same
// infinity, or NaN in both), else the difference is infinite.
template <class Err>
static double max_diff(const Tensor& a, const Tensor& b, Err err) {
    check_same(a, b);
    double m = 0;
    for (size_t i = 0; i < a.data.size(); ++i) {
        const double x = a.data[i], y = b.data[i];
        if (!std::isfinite(x) || !std::isfinite(y)) {
            if (!(x == y || (std::isnan(x) && std::isnan(y)))) return INFINITY;
            continue;
        }
        m = std::max(m, err(x, y));
    }
    return m;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
    return max_diff(a, b, [](double x, double y) { return std::fabs(x - y); });
}

double max_rel_diff(const Tensor& a, const Tensor& b, double floor) {
    return max_diff(a, b, [floor](double x, double y) { return std::fabs(x - y) / std::max(std::fabs(y), floor); });
}

}  // namespace attn
