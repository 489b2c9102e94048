// lessons/ops.hpp: the few tensor operations the lessons need beyond the
// library's attention: random tensors, transpose, PyTorch-style matmul and
// bmm (with their shape rules, so a lesson can show them failing), slices.
// Reading aids, written for clarity, not speed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"

namespace attn::lessons {

// Entries ~ N(0, std^2) drawn in row-major order from rng.
Tensor randn(Shape shape, Rng& rng, float std = 1.0f);
// [..., a, b] -> [..., b, a] (a copy: attn tensors have no strides).
Tensor transpose_last2(const Tensor& t);
// torch.matmul for rank >= 2: [..., n, k] @ [..., k, m] -> [..., n, m], with
// the leading (batch) dims broadcast. ShapeError when k differs or the batch
// dims cannot broadcast; the message names both shapes.
Tensor matmul(const Tensor& a, const Tensor& b);
// torch.bmm: both exactly 3-D, same batch, [B, n, k] @ [B, k, m]; ShapeError otherwise.
Tensor bmm(const Tensor& a, const Tensor& b);
// The [rows, cols] block at leading index (i0, i1) of a rank-4 tensor, or i0
// of a rank-3 tensor, as a flat row-major copy.
std::vector<float> block(const Tensor& t, int64_t i0, int64_t i1 = -1);
// Row sums of the last dimension, flattened over the leading ones.
std::vector<double> row_sums(const Tensor& t);
// Largest |row sum - 1| over rows (all rows).
double max_sum_error(const Tensor& t);
std::vector<std::string> index_labels(int64_t n, const std::string& prefix = "");

}  // namespace attn::lessons
