// attn/model/induction.hpp: finding previous-token and induction heads in a decoder's weights.
//
// The probe (Olsson et al., 2022): a sequence of n random tokens, then the same n again,
//   ids = [bos] r_1 .. r_n r_1 .. r_n          positions 0, 1..n, n+1..2n
// In the second copy the next token can be read off the first: a model that has learnt
// in-context copying predicts it, so its loss there falls far below the first copy's
// (random tokens cannot be guessed). Two kinds of heads do it together:
//   previous-token score of a head   mean over queries i >= 1 of w[i][i-1]
//   prefix-matching score            mean over queries i in the second copy of
//                                    w[i][i-n+1]: the query r_k attends to the token
//                                    after r_k's earlier occurrence (position k+1), the
//                                    token to copy
// w is the head's (T, T) attention; chance is about 1/(number of keys a query sees).
#pragma once

#include <cstdint>
#include <vector>

#include "attn/core/head_scores.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// [bos] then n tokens drawn uniformly from [lo, hi) with Rng(seed), then the same n again
// (bos < 0: none). InputError on n < 1 or an empty range.
std::vector<int32_t> repeated_random_tokens(int64_t n, int32_t lo, int32_t hi, uint64_t seed, int32_t bos);

// previous_token_scores and prefix_matching_scores: attn/core/head_scores.hpp (the tiny
// trained decoder of attn/train scores its heads with them too).
// Mean cross-entropy (nats) of predicting ids[t + 1] from logits row t, over t in [from, to).
double next_token_loss(const Tensor& logits, const std::vector<int32_t>& ids, int64_t from, int64_t to);

}  // namespace attn
