// Lesson 9: the mask smoke test: print one row, padded keys ~0, the rest sums
// to 1; and the same test catching masks applied the wrong way round (C27).
#include "common.hpp"

namespace attn::lessons::lesson09 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

constexpr int64_t B = 2, T = 6, Dk = 8;

struct Smoke {
    double on_padding = 0;  // total weight on padded keys
    double real_sum = 0;    // total weight on real keys
    bool pass = false;
};

// The smoke test on one row: padded keys ≈ 0, the real keys sum to 1.
Smoke smoke(const Tensor& w, int64_t b, int64_t i, int64_t len) {
    Smoke s;
    for (int64_t j = 0; j < T; ++j) (j < len ? s.real_sum : s.on_padding) += w.at({b, 0, i, j});
    s.pass = s.on_padding < 1e-6 && std::fabs(s.real_sum - 1) < 1e-5;
    return s;
}

// The padded batch both sections test: q, k, v, the lengths, the tokens' labels, and the right
// mask's record and smoke test on batch 1.
struct PaddedRun {
    Tensor q, k, v;  // [B, 1, T, Dk]
    std::vector<int64_t> lengths{6, 4};
    std::vector<std::string> tok{"the", "tea", "is", "hot", "<pad>", "<pad>"};
    int64_t len = lengths[1];
    AttentionRecord rr;
    Smoke s;
};

PaddedRun print_one_row(LessonContext& ctx) {
    ctx.section("Print one row");
    ctx.para("The cheapest test of a mask is to look at it working. Take a padded sequence, run attention, "
             "print one row of weights: the padded keys must show (about) zero, and the remaining weights "
             "must add up to 1. It takes a minute and catches a whole family of silent bugs.");
    Rng rng = ctx.rng(9);
    PaddedRun r;
    r.q = randn({B, 1, T, Dk}, rng), r.k = randn({B, 1, T, Dk}, rng), r.v = randn({B, 1, T, Dk}, rng);
    const Tensor &q = r.q, &k = r.k, &v = r.v;
    ctx.shape("q, k, v", q, "[B=2, H=1, T=6, Dk=8]");
    const std::vector<int64_t>& lengths = r.lengths;
    const int64_t len = r.len;
    const Mask right = Mask::key_padding(lengths);
    AttentionRecord& rr = r.rr;
    attention_reference(q, k, v, right, AttentionOptions{}, &rr);
    std::vector<float> row;
    for (int64_t j = 0; j < T; ++j) row.push_back(rr.weights.at({1, 0, 0, j}));
    r.s = smoke(rr.weights, 1, 0, len);
    const Smoke& s = r.s;
    ctx.code(ctx.f("batch 1 (length {}), query 0: {}\nweight on padding: {}\nsum over real keys: {:.7f}", len,
                         list(row, 4), s.on_padding, s.real_sum));
    ctx.figure("row", row);
    ctx.identity(s.pass, "C27",
              ctx.f("smoke test passes: padding gets {}, the real keys sum to 1 (|sum−1| = {})", s.on_padding,
                          e2(std::fabs(s.real_sum - 1))));
    return r;
}

void masks_built_the_wrong_way(LessonContext& ctx, const PaddedRun& r) {
    const Tensor &q = r.q, &k = r.k, &v = r.v;
    const std::vector<int64_t>& lengths = r.lengths;
    const std::vector<std::string>& tok = r.tok;
    const int64_t len = r.len;
    const AttentionRecord& rr = r.rr;
    const Smoke& s = r.s;
    ctx.section("The same test on masks built the wrong way round");
    ctx.para("Mask conventions disagree. attn and PyTorch's scaled_dot_product_attention take True = may "
             "attend; nn.MultiheadAttention's key_padding_mask takes True = ignore. Hand a 'pad' mask to an "
             "API that expects a 'keep' mask and the model attends only to padding. Another classic is to "
             "mask query rows instead of key columns. Both run without an error; the loss just refuses to go "
             "down. The smoke test catches both.");
    // bug 1: the keep/pad convention inverted: 1 where the token is padding
    std::vector<uint8_t> inverted(static_cast<size_t>(B * T));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < T; ++j)
            inverted[static_cast<size_t>(b * T + j)] = j >= lengths[static_cast<size_t>(b)] ? 1 : 0;
    const Mask inv = Mask::key_padding_bool(B, T, inverted);
    // bug 2: the padding applied to query rows (i) instead of key columns (j)
    std::vector<uint8_t> rows_masked(static_cast<size_t>(B * T * T));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j)
                rows_masked[static_cast<size_t>((b * T + i) * T + j)] = i < lengths[static_cast<size_t>(b)] ? 1 : 0;
    const Mask on_rows = Mask::custom(B, T, T, rows_masked);
    AttentionRecord ri, ro;
    attention_reference(q, k, v, inv, AttentionOptions{}, &ri);
    attention_reference(q, k, v, on_rows, AttentionOptions{}, &ro);
    const Smoke si = smoke(ri.weights, 1, 0, len), so = smoke(ro.weights, 1, 0, len);
    Table t;
    t.columns = {"mask", "weight on padding", "sum over real keys", "smoke test"};
    t.formats = {"", "{:.4f}", "{:.4f}"};
    t.add({"right: keep = real key", s.on_padding, s.real_sum, s.pass ? "pass" : "FAIL"});
    t.add({"inverted: keep = padding", si.on_padding, si.real_sum, si.pass ? "pass" : "FAIL"});
    t.add({"on query rows, not keys", so.on_padding, so.real_sum, so.pass ? "pass" : "FAIL"});
    ctx.table("smoke", t);
    ctx.heatmap("right", make_panel("right mask, batch 1", block(rr.weights, 1, 0).data(), T, T, tok, tok));
    ctx.heatmap("inverted", make_panel("inverted mask, batch 1: only padding is seen", block(ri.weights, 1, 0).data(),
                                       T, T, tok, tok));
    ctx.figure("inverted_weight_on_padding", si.on_padding);
    ctx.figure("rows_mask_weight_on_padding", so.on_padding);
    // both by construction: the inverted mask keeps only padding; a mask on query rows leaves real
    // rows a softmax over every key, and every softmax weight is positive
    ctx.identity(
        !si.pass, "C27",
        ctx.f("the smoke test catches the inverted mask: {:.3f} of the row's weight sits on padding", si.on_padding));
    ctx.identity(
        !so.pass, "C27",
        ctx.f("the smoke test catches a mask on query rows: {:.3f} of the weight sits on padding", so.on_padding));
    ctx.heatmap("on_rows", make_panel("mask on query rows, batch 1", block(ro.weights, 1, 0).data(), T, T, tok, tok));
    ctx.para("The last picture looks almost plausible: the padded rows are empty, as if the padding had been "
             "handled. Only the weights in the padded columns give the bug away, and the smoke test reads "
             "exactly those.");
    ctx.source_error("C27", "Smoke test: print one row of weights; padded positions ≈ 0, the rest sums to 1",
                     ctx.f("is sound advice, but the first article's code for it cannot run as written: it "
                                 "passes a key_padding_mask argument that the attention function it defines does not "
                                 "take; its [B, T] mask is used without unsqueeze, and [B, T] = [{}, {}] does not "
                                 "broadcast against [B, T, T] scores unless B = T; and it fills where mask == 0 while "
                                 "its mask marks padding with 1, which masks the real tokens and keeps the padding: "
                                 "the inverted mask of the table above, which puts {:.3f} of the row's weight on "
                                 "padding.",
                                 B, T, si.on_padding),
                     LessonContext::SourceFlag::slip);
}

void run(LessonContext& ctx) {
    const PaddedRun r = print_one_row(ctx);
    masks_built_the_wrong_way(ctx, r);
}

const RegisterLesson reg{{"smoke-test", "The mask smoke test",
                          "one printed row catches masks applied the wrong way round", {"C27"}, true, run,
                          Part::advanced, /*minutes*/ 4}};

}  // namespace
}  // namespace attn::lessons::lesson09
