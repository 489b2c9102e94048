// attn/core/tensor.hpp: the one tensor type of the library.
//
// A Tensor is contiguous row-major float32 storage plus a shape. Nothing more:
// no strides, no views, no autograd; code that wants a matrix view of a slice
// maps ptr() with Eigen::Map. Shape legend used everywhere in attn:
//   B batch, T sequence (Tq queries, Tk keys), D d_model, H heads, Dk, Dv.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace attn {

using Shape = std::vector<int64_t>;

// "[2, 6, 16]"
std::string shape_str(const Shape& shape);
// Product of the dimensions. Throws InputError on a negative dimension or on
// int64 overflow, so a huge configuration is an error, never a wrap-around.
int64_t shape_numel(const Shape& shape);

struct Tensor {
    Shape shape;
    std::vector<float> data;

    Tensor() = default;
    explicit Tensor(Shape s, float fill = 0.0f);
    static Tensor from(Shape s, std::vector<float> values);  // sizes must agree

    int64_t numel() const { return static_cast<int64_t>(data.size()); }
    int rank() const { return static_cast<int>(shape.size()); }
    // dim(-1) is the last dimension, as in PyTorch.
    int64_t dim(int i) const;
    float* ptr() { return data.data(); }
    const float* ptr() const { return data.data(); }
    // Element access by full index; bounds-checked (throws ShapeError).
    float& at(std::initializer_list<int64_t> idx);
    float at(std::initializer_list<int64_t> idx) const;
    // Same data, new shape with the same number of elements (a copy).
    Tensor reshaped(Shape s) const;
    bool empty() const { return data.empty(); }
};

// Largest |a - b| over all elements; shapes must match.
double max_abs_diff(const Tensor& a, const Tensor& b);
// Largest |a - b| / max(|b|, floor) (b is the reference); non-finite entries
// must agree exactly (both -inf, both NaN) or the result is +inf.
double max_rel_diff(const Tensor& a, const Tensor& b, double floor = 1e-6);

}  // namespace attn
