// Parameter, FLOP and memory accounting for attention (see attn/core/cost.hpp).
#include "attn/core/cost.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace attn {

namespace {
// Keys the queries 0 .. Tq-1 of `row` may attend to, summed. Causal and key padding
// alone count in closed form (key_end(i) = min(i + 1, key_len) or key_len), so a
// refusal of a huge size costs nothing; a dense or sparse part is counted per query.
double allowed_pairs(const MaskRow& row, int64_t Tq) {
    if (row.dense == nullptr && !row.sparse) {
        const double L = static_cast<double>(row.key_len), n = static_cast<double>(Tq);
        if (!row.causal) return n * L;
        const double ramp = std::min(n, std::max(L - 1.0, 0.0));  // queries i with i + 1 < L: i + 1 keys each
        return ramp * (ramp + 1.0) / 2.0 + (n - ramp) * L;
    }
    double pairs = 0;
    for (int64_t i = 0; i < Tq; ++i) pairs += static_cast<double>(row.allowed_count(i));
    return pairs;
}
}  // namespace

double attention_flops(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t Dk, int64_t Dv, const Mask& mask) {
    // pairs (b, i, j) a query may attend to; rows without a dense or sparse part count in closed form
    mask.check(B, H, Tq, Tk);
    const int64_t Hm = mask.heads();  // 1 unless the mask differs per head
    const bool same = mask.same_boolean_rows_per_batch();
    double pairs = 0;
    for (int64_t b = 0; b < (same ? 1 : B); ++b)
        for (int64_t h = 0; h < Hm; ++h) pairs += allowed_pairs(mask.row(b, h, Tk), Tq);
    if (same) pairs *= static_cast<double>(B);
    return pairs * static_cast<double>(H / Hm) * 2.0 * static_cast<double>(Dk + Dv);
}

AttentionCost attention_cost(int64_t B, int64_t T, int64_t D, int64_t H, int64_t Dk, int64_t Dv, bool bias) {
    AttentionCost c;
    const int64_t bq = bias ? H * Dk : 0, bv = bias ? H * Dv : 0, bo = bias ? D : 0;
    c.params_q = D * H * Dk + bq;
    c.params_k = D * H * Dk + bq;
    c.params_v = D * H * Dv + bv;
    c.params_o = H * Dv * D + bo;
    c.params_total = c.params_q + c.params_k + c.params_v + c.params_o;
    const double bt = static_cast<double>(B) * static_cast<double>(T);
    c.flops_projections = 2.0 * bt * D * (2.0 * H * Dk + H * Dv) + 2.0 * bt * H * Dv * D;
    c.flops_scores = attention_flops(B, H, T, T, Dk, 0, Mask::none());
    c.flops_weighted_sum = attention_flops(B, H, T, T, 0, Dv, Mask::none());
    c.flops_total = c.flops_projections + c.flops_scores + c.flops_weighted_sum;
    c.bytes_score_matrix = 4.0 * B * H * static_cast<double>(T) * T;
    return c;
}

std::string format_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (std::fabs(bytes) >= 1024.0 && u < 6) {
        bytes /= 1024.0;
        ++u;
    }
    return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.1f} {}", bytes, units[u]);
}

}  // namespace attn
