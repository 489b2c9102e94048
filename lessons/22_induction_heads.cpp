// Lesson 22: induction heads. A 2-layer attention-only decoder trained on random tokens
// repeated once learns to copy from its context in a sudden drop of the loss (the phase
// change); a previous-token head in layer 0 and an induction head in layer 1 do it together.
// A short run is trained live; the verdicts rest on the stored run of five seeds,
// data/evidence/induction-full.json (scripts/make-induction-evidence.sh). Beyond the source
// material (attn/train/induction.hpp has the definitions).
#include <nlohmann/json.hpp>

#include "attn/io/data_files.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/guards.hpp"
#include "attn/train/induction.hpp"
#include "common.hpp"

namespace attn::lessons::lesson22 {  // each lesson's own names (lessons/ compiles in unity batches)
namespace {

constexpr int64_t kT = 32, kSymbols = 64, kHeads = 2, kSteps = 400, kEvery = 25, kBatch = 32;
constexpr const char* kEvidence = "evidence/induction-full.json";

struct Live {
    TrainableStack model;
    Task task;
    InductionRun run;
};

Live train_live(LessonContext& ctx) {
    TaskOptions to;
    to.seq = kT;
    to.symbols = kSymbols;
    Task task(TaskKind::Induction, to);
    ModelConfig mc;
    mc.vocab = task.vocab();
    mc.max_seq = kT;
    mc.heads = kHeads;
    mc.mlp = false;
    TrainableStack model(mc);
    init_for_training(model, ctx.seed(), 1.0f);
    TrainConfig tc;
    tc.steps = kSteps;
    tc.batch = kBatch;
    tc.seed = ctx.seed();
    tc.threads = 2;
    tc.lr = kTaskLr;
    tc.eval_every = kEvery;
    InductionObserver obs(task, ctx.seed(), tc.threads);
    ctx.busy("training a 2-layer attention-only decoder on repeated random tokens");
    train_model(model, task, tc, [&](const TrainProgress& p) {
        if (p.eval) obs.observe(model, *p.eval);
    });
    InductionRun run = finish_induction(model, task, obs.trace(), tc.batch, tc.seed, tc.eval_batches, tc.threads);
    ctx.idle();
    return {std::move(model), std::move(task), std::move(run)};
}

double at(const PerHead& p, const ScoredHead& h) {
    return p[static_cast<size_t>(h.layer)][static_cast<size_t>(h.head)];
}

// The mean previous-token score of a head spreading its weight evenly over the keys it sees:
// mean over i >= 1 of 1/(i+1).
double uniform_prev_score(int64_t T) {
    double s = 0;
    for (int64_t i = 1; i < T; ++i) s += 1.0 / static_cast<double>(i + 1);
    return s / static_cast<double>(T - 1);
}

void live_section(LessonContext& ctx, Live& live) {
    const InductionRun& r = live.run;
    const ScoredHead p = r.prev_head, i = r.induction_head;
    Table t{{"step", "repeat loss", "prev-token (layer 0)", "prefix (layer 1)", "copying (layer 1)", ""},
            {"{}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{}"},
            {}};
    for (const auto& s : r.trace)
        t.add({s.step, s.loss, at(s.prev, p), at(s.prefix, i), at(s.copy, i),
               r.phase.found && s.step == r.phase.step ? ctx.tr("phase change") : ""});
    ctx.table("live_trace", t);
    ctx.figure("live_phase_step", r.phase.found ? nlohmann::json(r.phase.step) : nlohmann::json(nullptr));
    if (r.phase.found)
        ctx.para(
            ctx.f("In this run (seed {}) the loss on the repeat crossed halfway from ln {} = {} to its final {} at "
                  "step {}: previous-token head {}.{}, induction head {}.{}.",
                  ctx.seed(), kSymbols, fmt::format("{:.2f}", r.phase.plateau), fmt::format("{:.2f}", r.phase.final),
                  r.phase.step, p.layer, p.head, i.layer, i.head));
    else
        ctx.para(ctx.f("In this run (seed {}) the loss on the repeat is still {} after {} steps: the drop has not come "
                       "yet (a longer run has it; the stored runs below).",
                       ctx.seed(), fmt::format("{:.2f}", r.phase.final), kSteps));
    // the two heads on a probe row: queries of the repeat, every key
    const TaskBatch probe = induction_probe(live.task, 1, ctx.seed() + 22);
    (void)live.model.logits(probe.tokens.data(), 1, kT, 1);
    const auto& att = live.model.attention_weights();
    std::vector<std::string> keys, queries;
    for (int64_t k = 0; k < kT; ++k) keys.push_back(live.task.token_text(probe.tokens[static_cast<size_t>(k)]));
    for (int64_t q = kT / 2; q < kT; ++q) queries.push_back(keys[static_cast<size_t>(q)]);
    double above = 0;  // the causal mask at work in the trained model: no weight above the diagonal
    for (const Tensor& a : att)
        for (int64_t h = 0; h < a.dim(1); ++h)
            for (int64_t q = 0; q < kT; ++q)
                for (int64_t k = q + 1; k < kT; ++k) above = std::max(above, double(a.at({0, h, q, k})));
    ctx.shape("weights", att[static_cast<size_t>(p.layer)], "[B, H, T, T]: one probe row, each head's weights");
    ctx.identity(above == 0.0, "C24",
                 ctx.f("the trained decoder's causal mask: every weight on a later token is exactly {}", above));
    for (const ScoredHead& h : {p, i}) {
        const float* w = att[static_cast<size_t>(h.layer)].ptr() + (h.head * kT + kT / 2) * kT;
        ctx.heatmap(h.layer == 0 ? "previous_token_head" : "induction_head",
                    make_panel(ctx.f("layer {} head {}: queries of the repeat (rows), every key (columns)", h.layer,
                                     h.head),
                               w, kT / 2, kT, queries, keys));
    }
    Table abl{{"head", "prev-token", "prefix", "copying", "loss, head zeroed", "rise"},
              {"{}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:+.3f}"},
              {}};
    const InductionScores& last = r.trace.back();
    for (size_t l = 0; l < last.prev.size(); ++l)
        for (size_t h = 0; h < last.prev[l].size(); ++h)
            abl.add({fmt::format("{}.{}", l, h), last.prev[l][h], last.prefix[l][h], last.copy[l][h], r.ablation[l][h],
                     r.ablation[l][h] - r.loss});
    ctx.table("live_ablation", abl);
}

struct SeedRow {
    uint64_t seed = 0;
    bool found = false;
    int64_t step = 0, start = 0, end = 0;
    double seconds = 0, final = 0, plateau = 0;
    int64_t prev_layer = 0, ind_layer = 0;
    double prev = 0, prefix = 0, copy = 0, rise_prev = 0, rise_ind = 0, rise_both = 0;
    int64_t middle = 0;  // steps from the last evaluation above 75% of the way down to the first at or below 25%
    int64_t steps = 0;   // of the run
};

// The middle half of the drop: from the last evaluation (before the phase change) still above
// final + 0.75 (plateau - final) to the first at or below final + 0.25 (plateau - final).
int64_t middle_of_drop(const nlohmann::json& trace, double plateau, double final, int64_t phase_step) {
    const double hi = final + 0.75 * (plateau - final), lo = final + 0.25 * (plateau - final);
    int64_t from = 0, to = 0;
    bool reached = false;
    for (const auto& t : trace) {
        const int64_t step = t["step"].get<int64_t>();
        const double loss = t["loss"].get<double>();
        if (step <= phase_step && loss > hi) from = step;
        if (!reached && loss <= lo) to = step, reached = true;
    }
    return to - from;
}

std::vector<SeedRow> read_evidence(std::string* made) {  // made: date, commit, processor
    const auto path = find_data(kEvidence);
    if (!path) return {};
    const nlohmann::json j = parse_json(read_file(*path), *path);
    if (j.value("format", "") != "attn-induction-evidence") return {};
    made[0] = j["made"]["date"].get<std::string>();
    made[1] = j["made"]["commit"].get<std::string>();
    made[2] = j["made"]["processor"].get<std::string>();
    std::vector<SeedRow> rows;
    for (const auto& run : j["runs"]) {
        const auto& ind = run["induction"];
        SeedRow s;
        s.seed = run["seed"].get<uint64_t>();
        const auto& pc = ind["phase_change"];
        s.found = pc["found"].get<bool>();
        s.step = pc["step"].get<int64_t>(), s.start = pc["start"].get<int64_t>(), s.end = pc["end"].get<int64_t>();
        s.final = pc["final"].get<double>(), s.plateau = pc["plateau"].get<double>();
        for (const auto& t : ind["trace"])
            if (t["step"].get<int64_t>() == s.step) s.seconds = t["seconds"].get<double>();
        s.middle = middle_of_drop(ind["trace"], s.plateau, s.final, s.step);
        s.steps = ind["trace"].back()["step"].get<int64_t>();
        const auto& ph = ind["previous_token_head"];
        const auto& ih = ind["induction_head"];
        s.prev_layer = ph["layer"].get<int64_t>(), s.ind_layer = ih["layer"].get<int64_t>();
        s.prev = ph["score"].get<double>(), s.prefix = ih["score"].get<double>();
        const auto& last = ind["trace"].back();
        s.copy = last["copying"][static_cast<size_t>(s.ind_layer)][ih["head"].get<size_t>()].get<double>();
        const double base = ind["loss"].get<double>();
        const auto& per = ind["ablation"]["per_head"];
        s.rise_prev = per[static_cast<size_t>(s.prev_layer)][ph["head"].get<size_t>()].get<double>() - base;
        s.rise_ind = per[static_cast<size_t>(s.ind_layer)][ih["head"].get<size_t>()].get<double>() - base;
        s.rise_both = ind["ablation"]["both"].get<double>() - base;
        rows.push_back(s);
    }
    return rows;
}

void stored_section(LessonContext& ctx) {
    std::string made[3];
    std::vector<SeedRow> rows;
    try {
        rows = read_evidence(made);
    } catch (const std::exception&) {
        rows.clear();
    }
    if (rows.empty()) {
        ctx.para(
            ctx.f("The stored run ({}) was not found or does not read; scripts/make-induction-evidence.sh makes it.",
                  kEvidence));
        return;
    }
    ctx.para(ctx.f("The verdicts rest on a stored run: attn train --task induction at its defaults (1500 steps, "
                   "{} seeds), made {} at commit {} on {}; scripts/make-induction-evidence.sh makes it again.",
                   rows.size(), made[0], made[1], made[2]));
    Table t{{"seed", "phase change (step)", "drop (steps)", "time (s)", "final loss", "prev-token", "prefix", "copying",
             "rise, prev-token head", "rise, induction head", "rise, both"},
            {"{}", "{}", "{}", "{:.1f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:+.2f}", "{:+.2f}", "{:+.2f}"},
            {}};
    bool all_found = true, sharp = true, layers_ok = true;
    int64_t first = INT64_MAX, last = 0, widest = 0, run_steps = 0;
    double slowest = 0, min_prev = 1, min_prefix = 1, min_copy = 1, min_rise_prev = 1e9, min_rise_ind = 1e9,
           min_both = 1e9;
    for (const SeedRow& s : rows) {
        t.add({s.seed, s.found ? nlohmann::json(s.step) : nlohmann::json("—"), fmt::format("{}–{}", s.start, s.end),
               s.seconds, s.final, s.prev, s.prefix, s.copy, s.rise_prev, s.rise_ind, s.rise_both});
        all_found = all_found && s.found;
        first = std::min(first, s.step), last = std::max(last, s.step);
        widest = std::max(widest, s.middle), run_steps = std::max(run_steps, s.steps);
        sharp = sharp && s.found && 20 * s.middle <= s.steps;
        slowest = std::max(slowest, s.seconds);
        layers_ok = layers_ok && s.prev_layer == 0 && s.ind_layer == 1;
        min_prev = std::min(min_prev, s.prev), min_prefix = std::min(min_prefix, s.prefix);
        min_copy = std::min(min_copy, s.copy);
        min_rise_prev = std::min(min_rise_prev, s.rise_prev), min_rise_ind = std::min(min_rise_ind, s.rise_ind);
        min_both = std::min(min_both, s.rise_both);
    }
    ctx.table("stored_seeds", t);
    const double chance_prev = uniform_prev_score(kT);
    const double chance_prefix =
        1.0 / (static_cast<double>(kT) * 0.75);  // a uniform query of the repeat: 1/(i+1), i ~ 3T/4
    ctx.figure("stored_phase_steps", nlohmann::json::array({first, last}));
    ctx.check(all_found, "",
              ctx.f("every seed has a phase change: the loss on the repeat falls from about ln {} to below half of it, "
                    "crossing halfway between steps {} and {}, within {} s of training",
                    kSymbols, first, last, fmt::format("{:.1f}", slowest)));
    ctx.check(sharp, "",
              ctx.f("the drop is sudden: its middle half (75% to 25% of the way down) takes at most {} steps of {}, "
                    "within 5% of the run",
                    widest, run_steps));
    ctx.check(layers_ok && min_prev > 3 * chance_prev, "",
              ctx.f("layer 0 holds a previous-token head in every seed: score at least {} (a uniform head: {})",
                    fmt::format("{:.2f}", min_prev), fmt::format("{:.2f}", chance_prev)));
    ctx.check(layers_ok && min_prefix > 3 * chance_prefix && min_copy >= 0.9, "",
              ctx.f("layer 1 holds an induction head in every seed: prefix-matching score at least {} (a uniform head: "
                    "about {}), copying score at least {}",
                    fmt::format("{:.2f}", min_prefix), fmt::format("{:.2f}", chance_prefix),
                    fmt::format("{:.2f}", min_copy)));
    ctx.check(
        min_rise_prev > 0 && min_rise_ind > 0 && min_both > 1.0, "",
        ctx.f("zeroing either head raises the loss on the repeat (by at least {} and {} nats), zeroing both by at "
              "least {}",
              fmt::format("{:.2f}", min_rise_prev), fmt::format("{:.2f}", min_rise_ind),
              fmt::format("{:.2f}", min_both)));
}

void copying_from_the_context(LessonContext& ctx) {
    ctx.section("Copying from the context");
    ctx.para("Give a decoder random tokens, then the same tokens again. The first copy cannot be predicted: the "
             "tokens are uniform, and the best loss without the context is ln S for S symbols. The second copy can "
             "be read off the first: after token A, look back for the earlier A, and predict the token that "
             "followed it. Language models do this all the time (a name, a phrase seen earlier), and the circuit "
             "that does it has a name: an induction head. It takes two layers. A head in layer 0 attends to the "
             "previous token and writes it into each position; a head in layer 1 matches the current token against "
             "those \"previous tokens\" and so finds the position after the earlier A, then copies the token it "
             "finds there.");
    ctx.para("attn train --task induction trains the standard setting: rows of T = 32 tokens from S = 64 symbols, "
             "a random copy length n between T/4 and T/2 repeated once (random filler before it, so no fixed offset "
             "finds the copy), a 2-layer decoder with attention only (no MLP, 2 heads a layer), and the loss on the "
             "last tokens of the repeat.");
}

void three_scores_per_head(LessonContext& ctx) {
    ctx.section("Three scores per head");
    ctx.para("On a probe of n random tokens repeated once, with w the head's attention weights: the previous-token "
             "score is the mean over queries i of w[i][i-1]; the prefix-matching score is the mean over queries i "
             "of the repeat of w[i][i-n+1], the weight on the token after the earlier occurrence. The copying "
             "score reads the head's OV circuit: for each symbol t, the logits the head adds when it attends to t "
             "are W_U W_O W_V E[t] (the LayerNorms' centring and weights included, their scaling, the biases and "
             "the positions left out); the score is the share of symbols whose own logit is the largest. A phase "
             "change is the first evaluation where the loss is below halfway between ln S and the final loss.");
}

void a_quick_run_live(LessonContext& ctx) {
    ctx.section("A quick run, live");
    ctx.para("Here: 400 steps (a few seconds). The full run, with the loss and the scores drawn over training "
             "and the phase change marked: attn train --task induction --svg induction.svg");
    Live live = train_live(ctx);
    live_section(ctx, live);
}

void what_five_seeds_say(LessonContext& ctx) {
    ctx.section("What five seeds say");
    stored_section(ctx);
}

void open_the_model_yourself(LessonContext& ctx) {
    ctx.section("Open the model yourself");
    ctx.para("A 3000-step run of this model ships with attn as a GPT-2 folder, data/decoders/induction-2l, written by "
             "attn train --task induction --steps 3000 --export-gpt2 DIR. attn model induction probes it; "
             "attn model heads --model data/decoders/induction-2l --text abcdefghijklmnopabcdefghijklmnop --ablation "
             "removes each head in turn; attn model cache writes every activation of a forward pass; transformers' "
             "GPT2LMHeadModel opens the same folder.");
}

void run(LessonContext& ctx) {
    copying_from_the_context(ctx);
    three_scores_per_head(ctx);
    a_quick_run_live(ctx);
    what_five_seeds_say(ctx);
    open_the_model_yourself(ctx);
}

const RegisterLesson reg{{"induction-heads", "Induction heads",
                          "a 2-layer attention-only decoder learns to copy from its context: the phase change, the "
                          "previous-token and induction heads, ablation",
                          {"C24"}, true, run, Part::advanced, /*minutes*/ 6}};

}  // namespace
}  // namespace attn::lessons::lesson22
