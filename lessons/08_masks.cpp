// Lesson 8: masks: key padding, causal, both; -inf before softmax vs zeroing
// after; the fill value; a fully masked row; padded query rows (C23-C28).
#include <limits>

#include "common.hpp"

namespace attn::lessons::lesson08 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

constexpr int64_t B = 2, T = 5, Dk = 8;

// Largest weight any query of batch row b gives to a key it may not see.
double leaked(const Tensor& w, const Mask& m) {
    double worst = 0;
    for (int64_t b = 0; b < w.dim(0); ++b) {
        const MaskRow row = m.row(b, T);
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j)
                if (!row.allowed(i, j)) worst = std::max(worst, double(w.at({b, 0, i, j})));
    }
    return worst;
}

std::string row_text(const Tensor& w, int64_t b, int64_t i) {
    std::vector<float> r;
    for (int64_t j = 0; j < w.dim(3); ++j) r.push_back(w.at({b, 0, i, j}));
    return list(r, 3);
}

// One batch of random q, k, v [B=2, H=1, T=5, Dk=8]; its sequences have lengths 5 and 3.
struct Batch {
    Tensor q, k, v;
};
const std::vector<int64_t> kLengths{5, 3};
const std::vector<std::string> kTokens0{"we", "like", "green", "tea", "now"},
    kTokens1{"tea", "is", "hot", "<pad>", "<pad>"};

// Returns the padded weights (lengths 5 and 3) and their worst row-sum error.
std::pair<Tensor, double> key_padding(LessonContext& ctx, const Batch& in) {
    const auto& [q, k, v] = in;
    ctx.section("Key padding: [B, 1, 1, T] broadcast over heads and queries");
    ctx.para("Sequences in a batch have different lengths, so the short ones are padded to T. Padding tokens "
             "are not words: no query may take information from them. The key-padding mask has one entry per "
             "key, shape [B, 1, 1, T] against scores [B, H, T, T] (1 = real token); its two 1s broadcast it "
             "over the H heads and the T queries, so the same columns are masked in every row of every head. "
             "(A single head's scores are [B, T, T], and there [B, 1, T] is the shape.) Our batch: lengths 5 "
             "and 3, T = 5.");
    ctx.shape("q, k, v", q, "[B=2, H=1, T=5, Dk=8], random");
    const Mask pad = Mask::key_padding(kLengths);
    std::string mask_text = ctx.tr("key mask [B, 1, 1, T]:");
    for (int64_t b = 0; b < B; ++b) {
        const MaskRow row = pad.row(b, T);
        mask_text += "\n  ";
        mask_text += ctx.f("batch {}:", b);
        mask_text += " [";
        for (int64_t j = 0; j < T; ++j) mask_text += fmt::format("{}{}", j ? " " : "", row.allowed(0, j) ? 1 : 0);
        mask_text += "]";
    }
    mask_text += "\n";
    mask_text += ctx.tr("broadcast to [B, H, T, T] for batch 1 (row = query):");
    const MaskRow row1 = pad.row(1, T);
    for (int64_t i = 0; i < T; ++i) {
        mask_text += "\n  [";
        for (int64_t j = 0; j < T; ++j) mask_text += fmt::format("{}{}", j ? " " : "", row1.allowed(i, j) ? 1 : 0);
        mask_text += "]";
    }
    ctx.shape("key mask", Shape{B, 1, 1, T}, pad.describe());
    ctx.code(mask_text);
    AttentionRecord rp;
    attention_reference(q, k, v, pad, AttentionOptions{}, &rp);
    ctx.shape("weights", rp.weights, "[B, H, T, T]");
    ctx.heatmap("padding_batch1", make_panel("key padding, batch 1 (length 3)", block(rp.weights, 1, 0).data(), T, T,
                                             kTokens1, kTokens1));
    const double lp = leaked(rp.weights, pad), ep = max_row_sum_error(rp.weights, pad);
    ctx.figure("padding_leak", lp);
    ctx.identity(lp == 0.0, "C23,C26", ctx.f("every padded key gets weight exactly 0 (largest: {})", lp));
    ctx.identity(ep < 1e-5, "C23", ctx.f("every row still sums to 1 over the real keys (max |sum−1| = {})", e2(ep)));
    ctx.source_error("C23", "the padding mask broadcasts as [batch, 1, seq]",
                     ctx.f("fits the single head of the first article's mask section, whose scores are [B, T, T] "
                           "(its code: key_padding_mask.unsqueeze(1)). The same article's multi-head code applies "
                           "its mask to scores [B, H, T, T], and there a [B, 1, T] mask lines up from the right as "
                           "[1, B, 1, T]: its batch axis falls on the heads. With B = {} and H = 8 the shapes "
                           "refuse to broadcast; with B = H they broadcast and mask the wrong heads. Multi-head "
                           "attention needs [B, 1, 1, T].",
                           B),
                     LessonContext::SourceFlag::imprecise);
    return {rp.weights, ep};
}

void causal_mask(LessonContext& ctx, const Batch& in) {
    const auto& [q, k, v] = in;
    ctx.section("Causal: no peeking at the future");
    ctx.para("A decoder that predicts token i+1 must not see tokens after i while it does. The causal mask "
             "lets query i see keys j ≤ i: everything above the diagonal is masked (torch.triu(ones, "
             "diagonal=1) marks exactly those cells).");
    const Mask causal = Mask::make_causal();
    AttentionRecord rc;
    attention_reference(q, k, v, causal, AttentionOptions{}, &rc);
    ctx.heatmap("causal_batch0",
                make_panel("causal, batch 0", block(rc.weights, 0, 0).data(), T, T, kTokens0, kTokens0));
    const double lc = leaked(rc.weights, causal);
    ctx.identity(lc == 0.0, "C24", ctx.f("every weight above the diagonal is exactly 0 (largest: {})", lc));
    ctx.identity(rc.weights.at({0, 0, 0, 0}) == 1.0f, "C24",
              ctx.f("the first query sees only itself: weight {}", g4(rc.weights.at({0, 0, 0, 0}))));
}

void both_masks(LessonContext& ctx, const Batch& in) {
    const auto& [q, k, v] = in;
    const Mask causal = Mask::make_causal(), pad = Mask::key_padding(kLengths);
    ctx.section("Both at once");
    ctx.para("A decoder batch needs both: a key is visible if it is in the past and it is real. The masks "
             "combine by AND.");
    const Mask both = causal.combined(pad);
    AttentionRecord rb;
    attention_reference(q, k, v, both, AttentionOptions{}, &rb);
    ctx.shape("combined mask", Shape{B, T, T}, both.describe());
    ctx.heatmap("both_batch1",
                make_panel("causal + padding, batch 1", block(rb.weights, 1, 0).data(), T, T, kTokens1, kTokens1));
    const double lb = leaked(rb.weights, both), eb = max_row_sum_error(rb.weights, both);
    ctx.identity(lb == 0.0 && eb < 1e-5, "C23,C24",
              ctx.f("no weight on a future or padded key ({}), rows sum to 1 (max |sum−1| = {})", lb, e2(eb)));
}

void mask_before_softmax(LessonContext& ctx, const Batch& in, const Tensor& padded, double ep) {
    const auto& [q, k, v] = in;
    ctx.section("Mask before softmax, not after");
    ctx.para("The mask belongs on the scores, as −inf, before softmax: exp(−inf) = 0, so masked keys get "
             "nothing and the visible keys share the whole unit of weight. A tempting shortcut is to run "
             "softmax on everything and zero the padded weights afterwards. The padded keys' share then "
             "simply disappears and the rows no longer sum to 1. Here is batch 1, row by row:");
    AttentionRecord rn;
    attention_reference(q, k, v, Mask::none(), AttentionOptions{}, &rn);
    Tensor after = rn.weights;  // softmax first, then zero the padded columns
    ctx.shape("weights", rn.weights, "no mask: softmax over all keys");
    ctx.shape("zeroed after", after, "padded columns set to 0 afterwards");
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = kLengths[static_cast<size_t>(b)]; j < T; ++j) after.at({b, 0, i, j}) = 0.0f;
    Table t;
    t.columns = {"query", "row sum: −inf before softmax", "row sum: zeroed after softmax"};
    t.formats = {"", "{:.6f}", "{:.6f}"};
    double worst_after = 0;
    std::vector<double> sums_after;
    for (int64_t i = 0; i < T; ++i) {
        double s1 = 0, s2 = 0;
        for (int64_t j = 0; j < T; ++j) s1 += padded.at({1, 0, i, j}), s2 += after.at({1, 0, i, j});
        t.add({kTokens1[static_cast<size_t>(i)], s1, s2});
        sums_after.push_back(s2);
    }
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i) {
            double s2 = 0;
            for (int64_t j = 0; j < T; ++j) s2 += after.at({b, 0, i, j});
            worst_after = std::max(worst_after, std::fabs(s2 - 1));
        }
    ctx.predict("row_sum_zeroed_after", "batch 1 has 3 real tokens and 2 padded ones. Softmax over all 5 keys first, "
                "then set the 2 padded weights to 0: what does the first query's row sum to?", sums_after[0],
                Closeness::absolute(0.03));
    ctx.table("before_vs_after", t);
    ctx.figure("row_sums_zeroed_after_batch1", sums_after);
    ctx.figure("max_sum_error_zeroed_after", worst_after);
    ctx.figure("max_sum_error_masked_before", ep);
    // softmax weights are all positive, so zeroing any of them leaves a row summing below 1: a theorem
    ctx.identity(ep < 1e-5 && worst_after > 1e-6, "C25",
              ctx.f("−inf before softmax: max |sum−1| = {}; zeroing after: max |sum−1| = {}", e2(ep), g3(worst_after)));
    Tensor renorm = after;  // the repair: divide each row by its sum
    for (int64_t r = 0; r < B * T; ++r) {
        double s = 0;
        for (int64_t j = 0; j < T; ++j) s += renorm.data[static_cast<size_t>(r * T + j)];
        for (int64_t j = 0; j < T; ++j)
            renorm.data[static_cast<size_t>(r * T + j)] =
                static_cast<float>(renorm.data[static_cast<size_t>(r * T + j)] / s);
    }
    ctx.shape("renormalised", renorm, "each row divided by its sum");
    const double dr = max_abs_diff(renorm, padded);
    ctx.identity(
        dr < 1e-6, "C25",
        ctx.f("zeroing after softmax and then renormalising each row gives the masked weights back (max diff {})",
              e2(dr)));
    ctx.para("So masking after softmax is wrong by exactly the missing normalisation; −inf before softmax "
             "gets it for free.");
}

void fill_values(LessonContext& ctx, const Batch& in) {
    const auto& [q, k, v] = in;
    const Mask pad = Mask::key_padding(kLengths);
    ctx.section("What to fill with: 0, −1e9 or −inf");
    ctx.para("masked_fill needs a value. 0 is a classic bug: a score of 0 is an ordinary score, so padded "
             "keys get a normal-sized weight. −1e9 and −inf both send exp() to 0 and agree on any row that "
             "has a visible key.");
    Table f;
    f.columns = {"fill", "largest weight on a padded key", "max |row sum − 1|"};
    f.formats = {"", "{:.3g}", "{:.2e}"};
    std::vector<Tensor> fw;
    for (float fill : {0.0f, -1e9f, -INFINITY}) {
        AttentionOptions o;
        o.fill = fill;
        AttentionRecord r;
        attention_reference(q, k, v, pad, o, &r);
        f.add({std::isinf(fill) ? std::string("-inf")
               : fill == 0.0f   ? std::string("0")
                                : std::string("-1e9"),
               leaked(r.weights, pad), max_row_sum_error(r.weights, pad)});
        fw.push_back(r.weights);
    }
    ctx.table("fill", f);
    const double l0 = leaked(fw[0], pad), d9 = max_abs_diff(fw[1], fw[2]);
    ctx.figure("fill0_leak", l0);
    ctx.check(l0 > 0.01, "C28", ctx.f("fill 0 leaks: a padded key gets weight up to {}", g3(l0)));
    ctx.identity(d9 == 0.0, "C28", ctx.f("fill −1e9 and −inf give identical weights here (max diff {})", d9));

    // float16: 5 exponent bits, 10 fraction bits; a value at or past max + half an ulp rounds to inf
    const double f16_max = std::ldexp(2.0 - std::ldexp(1.0, -10), 15);
    const double f16_overflow = f16_max + std::ldexp(1.0, 15 - 10 - 1);
    ctx.para(
        ctx.f("−1e9 is safe in float32 (largest finite {:.3g}) and bfloat16 (same exponent range), but "
              "not in float16, whose largest finite value is {:g}: any number at or beyond {:g} rounds "
              "to infinity. PyTorch's masked_fill of −1e9 on a float16 tensor refuses the value (an overflow "
              "error), but the same −1e9 reaching float16 through a cast or arithmetic, as an additive "
              "mask does, becomes −inf, and then the \"safe\" fill "
              "behaves exactly like −inf, empty rows included. The portable fills are −inf itself (with "
              "a rule for empty rows, below) or the score dtype's own minimum, torch.finfo(dtype).min "
              "(−{:g} in float16).",
              double(std::numeric_limits<float>::max()), f16_max, f16_overflow, f16_max));
    ctx.identity(1e9 >= f16_overflow && 1e9 < double(std::numeric_limits<float>::max()), "C28",
                 ctx.f("1e9 is {} times float16's overflow threshold {:g}, and far inside float32's range",
                             g3(1e9 / f16_overflow), f16_overflow));
}

void row_with_nothing_to_see(LessonContext& ctx, const Batch& in) {
    const auto& [q, k, v] = in;
    ctx.section("A row with nothing to see");
    ctx.para("They differ when a row has no visible key at all, say a sequence of length 0. With −1e9 every "
             "score is −1e9, softmax sees a row of equal scores and returns the uniform 1/T, padding "
             "included (PyTorch does the same). With −inf softmax is 0/0; PyTorch returns NaN, which then "
             "spreads through everything it touches. attn defines such a row as all zeros, so its output is "
             "0.");
    const Mask empty = Mask::key_padding({5, 0});
    AttentionOptions o9;
    o9.fill = -1e9f;
    AttentionRecord re9, rei;
    attention_reference(q, k, v, empty, o9, &re9);
    const Tensor out_inf = attention_reference(q, k, v, empty, AttentionOptions{}, &rei);
    ctx.code(ctx.f("lengths [5, 0], batch 1, query 0:\n  fill −1e9: {}\n  fill −inf: {}", row_text(re9.weights, 1, 0),
                         row_text(rei.weights, 1, 0)));
    double uni = 0, zero = 0, out0 = 0;
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
            uni = std::max(uni, std::fabs(double(re9.weights.at({1, 0, i, j})) - 1.0 / double(T)));
            zero = std::max(zero, double(std::fabs(rei.weights.at({1, 0, i, j}))));
        }
    for (int64_t i = 0; i < T; ++i)
        for (int64_t d = 0; d < Dk; ++d) out0 = std::max(out0, double(std::fabs(out_inf.at({1, 0, i, d}))));
    ctx.identity(uni < 1e-6, "C28",
                 ctx.f("−1e9: the empty row is uniform, 1/T on every key (max deviation {})", e2(uni)));
    ctx.identity(zero == 0.0 && out0 == 0.0, "C28", "−inf: the empty row is all zeros and so is its output (no NaN)");
}

void padded_query_rows(LessonContext& ctx, const Batch& in, Rng& rng) {
    const auto& [q, k, v] = in;
    const Mask pad = Mask::key_padding(kLengths);
    ctx.section("Padded query rows do not matter");
    ctx.para("The mask is on keys (columns). Rows of padded queries still get ordinary-looking weights over "
             "the real keys: look at rows <pad> in the first heatmap. That is fine, because nothing reads "
             "them: the loss ignores padded positions, and no real query can see a padded key. The check: "
             "change everything about the padded tokens of batch 1 (their q, k and v); the real rows' "
             "outputs do not move, only the padded rows' do.");
    Tensor q2 = q, k2 = k, v2 = v;
    for (int64_t i = kLengths[1]; i < T; ++i)
        for (int64_t d = 0; d < Dk; ++d) {
            q2.at({1, 0, i, d}) += 5.0f * rng.normal();
            k2.at({1, 0, i, d}) += 5.0f * rng.normal();
            v2.at({1, 0, i, d}) += 5.0f * rng.normal();
        }
    const Tensor o1 = attention_reference(q, k, v, pad, AttentionOptions{});
    const Tensor o2 = attention_reference(q2, k2, v2, pad, AttentionOptions{});
    ctx.shape("q', k', v'", q2, "padded tokens of batch 1 changed");
    ctx.shape("out, out'", o2, "before and after the change");
    double real_move = 0, pad_move = 0;
    for (int64_t i = 0; i < T; ++i)
        for (int64_t d = 0; d < Dk; ++d) {
            const double m = std::fabs(double(o1.at({1, 0, i, d})) - o2.at({1, 0, i, d}));
            (i < kLengths[1] ? real_move : pad_move) = std::max(i < kLengths[1] ? real_move : pad_move, m);
        }
    ctx.figure("real_rows_change", real_move);
    ctx.figure("padded_rows_change", pad_move);
    ctx.identity(real_move == 0.0 && pad_move > 0.0, "C26",
              ctx.f("real rows change by {}, padded rows by {}: the padding only affects rows nobody uses",
                          real_move, g3(pad_move)));
}

void forgetting_the_look_ahead_mask(LessonContext& ctx, const Batch& in) {
    const auto& [q, k, v] = in;
    const Mask causal = Mask::make_causal();
    ctx.section("Forgetting the look-ahead mask");
    ctx.para("The first bug on the source's list: a decoder without the causal mask. Every position can then "
             "read the tokens it is supposed to predict. Change only the last token's value and watch the "
             "first position's output.");
    Tensor v3 = v;
    for (int64_t d = 0; d < Dk; ++d) v3.at({0, 0, T - 1, d}) += 1.0f;
    const Tensor a1 = attention_reference(q, k, v, Mask::none(), AttentionOptions{});
    const Tensor a2 = attention_reference(q, k, v3, Mask::none(), AttentionOptions{});
    const Tensor c1 = attention_reference(q, k, v, causal, AttentionOptions{});
    const Tensor c2 = attention_reference(q, k, v3, causal, AttentionOptions{});
    ctx.shape("v'", v3, "last token's value + 1");
    ctx.shape("out ×4", a1, "no mask / causal, with v and with v'");
    double moved_open = 0, moved_causal = 0;
    for (int64_t d = 0; d < Dk; ++d) {
        moved_open = std::max(moved_open, std::fabs(double(a1.at({0, 0, 0, d})) - a2.at({0, 0, 0, d})));
        moved_causal = std::max(moved_causal, std::fabs(double(c1.at({0, 0, 0, d})) - c2.at({0, 0, 0, d})));
    }
    ctx.figure("future_leak_without_causal", moved_open);
    ctx.check(moved_open > 1e-3 && moved_causal == 0.0, "C24,C28",
              ctx.f("without the mask position 0 moves by {} when token {} changes; with it, by {}", g3(moved_open),
                          T - 1, moved_causal));
    ctx.exercise("causal", "padding");
}

void run(LessonContext& ctx) {
    Rng rng = ctx.rng(8);
    Batch in;
    in.q = randn({B, 1, T, Dk}, rng), in.k = randn({B, 1, T, Dk}, rng), in.v = randn({B, 1, T, Dk}, rng);
    const auto [padded, ep] = key_padding(ctx, in);
    causal_mask(ctx, in);
    both_masks(ctx, in);
    mask_before_softmax(ctx, in, padded, ep);
    fill_values(ctx, in);
    row_with_nothing_to_see(ctx, in);
    padded_query_rows(ctx, in, rng);
    forgetting_the_look_ahead_mask(ctx, in);
}

const RegisterLesson reg{{"masks", "Masks",
                          "key padding [B, 1, 1, T], causal, both; -inf before softmax vs zeroing after; fill values",
                          {"C23", "C24", "C25", "C26", "C28"}, true, run, Part::core, /*minutes*/ 9}};

}  // namespace
}  // namespace attn::lessons::lesson08
