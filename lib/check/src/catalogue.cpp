// The catalogue of known mistakes (attn/check/check.hpp): what each is in plain words,
// the fix, and the lesson of `attn tour` that explains the step.
#include <fmt/format.h>

#include "attn/check/check.hpp"
#include "attn/core/errors.hpp"

namespace attn::check {

const std::vector<Mistake>& catalogue() {
    static const std::vector<Mistake> all = {
        {"weight-not-transposed", "the projections were taken as x·W instead of x·Wᵀ",
         "nn.Linear stores W as [out, in]: compute x @ W.T (+ b)", "lesson 2 (Q, K, V)"},
        {"missing-bias", "a projection left out its bias b", "add the bias after the product: x @ W.T + b",
         "lesson 2 (Q, K, V)"},
        {"split-no-transpose", "the heads were split with a reshape alone: (B, T, H·Dk) read as (B, H, T, Dk)",
         "view as (B, T, H, Dk), then transpose(1, 2) to (B, H, T, Dk)", "lesson 10 (multi-head)"},
        {"kv-repeat-order", "the key/value heads were repeated in the wrong order (tiled instead of interleaved)",
         "query head h reads kv head h // (H / H_kv): use repeat_interleave (np.repeat), not tile/repeat",
         "lesson 18 (GQA and MQA)"},
        {"scores-transposed", "the scores were taken as K·Qᵀ instead of Q·Kᵀ (rows are keys, not queries)",
         "scores = Q @ K.T: row i belongs to query i", "lesson 3 (the dot product)"},
        {"no-scale", "the scores were not scaled by 1/√Dk",
         "multiply the scores by 1/sqrt(Dk) before the mask and the softmax", "lesson 5 (why √Dk)"},
        {"scale-by-dk", "the scores were divided by Dk instead of √Dk",
         "divide by sqrt(Dk), the square root of the per-head width", "lesson 5 (why √Dk)"},
        {"scale-by-dmodel", "the scores were divided by √D (the model width) instead of √Dk (the width of a head)",
         "divide by sqrt(Dk) with Dk = D / H, the width of one head", "lesson 10 (multi-head)"},
        {"mask-zero-fill", "masked scores were set to 0 instead of −∞, so masked keys still get weight",
         "fill masked scores with -inf (or a very negative number) before the softmax", "lesson 8 (masks)"},
        {"mask-missing", "the mask was not applied: every query attends to every key",
         "fill the scores of the keys a query may not see with -inf before the softmax", "lesson 8 (masks)"},
        {"mask-after-softmax", "the mask was applied after the softmax, so the kept weights no longer sum to 1",
         "mask the scores (fill -inf) before the softmax, never the weights after it", "lesson 8 (masks)"},
        {"causal-off-by-one", "the causal mask is off by one: a token cannot see itself, or sees the next token",
         "allow key j for query i exactly when j <= i (np.triu(..., k=1) marks what to hide)", "lesson 8 (masks)"},
        {"mask-on-queries", "the padding mask was applied to the query rows instead of the key columns",
         "padding hides keys: mask the columns j >= length, for every query row", "lesson 8 (masks)"},
        {"mask-inverted", "the mask was inverted: the allowed keys were hidden and the hidden ones allowed",
         "fill where the mask says 'may not attend' (mask == 0 when 1 means keep)", "lesson 8 (masks)"},
        {"softmax-query-axis", "the softmax ran over the queries (axis -2) instead of the keys (axis -1)",
         "softmax over the last axis: each query's row of weights sums to 1", "lesson 4 (softmax)"},
        {"no-softmax", "the softmax was left out: the (masked) scores were used as weights",
         "weights = softmax(scores, axis=-1) before multiplying by V", "lesson 4 (softmax)"},
        {"unstable-softmax",
         "the softmax overflowed: exp of large scores without subtracting the row max gives inf/NaN",
         "subtract each row's max before exp: exp(s - s.max(-1, keepdims=True))", "lesson 4 (softmax)"},
        {"merge-no-transpose", "the heads were merged with a reshape alone: (B, H, T, Dv) read as (B, T, H·Dv)",
         "transpose(1, 2) back to (B, T, H, Dv), then reshape to (B, T, H·Dv)", "lesson 10 (multi-head)"},
        {"no-output-projection", "the output projection W_o was left out", "out = merged @ W_o.T + b_o",
         "lesson 10 (multi-head)"},
    };
    return all;
}

const Mistake& mistake(const std::string& id) {
    for (const Mistake& m : catalogue())
        if (m.id == id) return m;
    throw InputError(fmt::format("'{}' is no mistake of the catalogue", id));
}

std::string diagnosis_text(const Mistake& m) {
    return fmt::format("{}. Fix: {}. See {}.", m.what, m.fix, m.lesson);
}

int mistake_forms(const std::string& id) {
    if (id == "weight-not-transposed" || id == "missing-bias") return 5;  // all, then q, k, v, o alone
    if (id == "split-no-transpose") return 4;  // all, then Q, K, V alone
    if (id == "causal-off-by-one") return 3;    // j < i (empty row NaN or 0), j <= i + 1
    if (id == "kv-repeat-order" || id == "mask-after-softmax" || id == "mask-on-queries" || id == "mask-inverted")
        return id == "kv-repeat-order" ? 3 : 2;
    return 1;
}

}  // namespace attn::check
