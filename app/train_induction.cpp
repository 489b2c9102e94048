// train_induction.cpp: the induction part of `attn train` (see train_induction.hpp).
#include "train_induction.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "attn/viz/chart.hpp"
#include "attn/viz/svg.hpp"

namespace attn::cli {

namespace {

std::string head_name(const ScoredHead& h) { return fmt::format("{}.{}", h.layer, h.head); }

double at(const PerHead& p, const ScoredHead& h) {
    return p[static_cast<size_t>(h.layer)][static_cast<size_t>(h.head)];
}

void print_phase(std::FILE* out, const InductionRun& r) {
    const PhaseChange& pc = r.phase;
    if (!pc.found) {
        fmt::print(out,
                   "  phase change: not found (the repeated-half loss ended at {:.3f}, above half of ln S = {:.3f}; "
                   "train longer: --steps)\n",
                   pc.final, pc.plateau);
        return;
    }
    double secs = 0;
    for (const auto& s : r.trace)
        if (s.step == pc.step) secs = s.seconds;
    fmt::print(out,
               "  phase change at step {} ({:.1f} s of training): the repeated-half loss crossed the midpoint between "
               "ln S = {:.3f} (no use of the context) and its final {:.3f}; the drop ran from step {} to step {} "
               "(90% -> 10% of the way)\n",
               pc.step, secs, pc.plateau, pc.final, pc.start, pc.end);
}

void print_trace(std::FILE* out, const InductionRun& r) {
    const ScoredHead& p = r.prev_head;
    const ScoredHead& i = r.induction_head;
    fmt::print(out, "\n  {:>7}  {:>7}  {:>10}  {:>10}  {:>10}  {:>10}\n", "step", "loss",
               fmt::format("prev {}", head_name(p)), fmt::format("prefix {}", head_name(i)),
               fmt::format("copy {}", head_name(i)), fmt::format("prev {}", head_name(i)));
    for (const auto& s : r.trace)
        fmt::print(out, "  {:>7}  {:>7.3f}  {:>10.3f}  {:>10.3f}  {:>10.3f}  {:>10.3f}{}\n", s.step, s.loss,
                   at(s.prev, p), at(s.prefix, i), at(s.copy, i), at(s.prev, i),
                   r.phase.found && s.step == r.phase.step ? "  <- phase change" : "");
}

void print_heads(std::FILE* out, const InductionRun& r) {
    const InductionScores& last = r.trace.back();
    fmt::print(out, "\n  {:>5}  {:>10}  {:>10}  {:>8}  {:>13}  {:>9}\n", "head", "prev-token", "prefix", "copying",
               "ablated loss", "rise");
    for (size_t l = 0; l < last.prev.size(); ++l)
        for (size_t h = 0; h < last.prev[l].size(); ++h) {
            const bool p = static_cast<int64_t>(l) == r.prev_head.layer && static_cast<int64_t>(h) == r.prev_head.head;
            const bool i =
                static_cast<int64_t>(l) == r.induction_head.layer && static_cast<int64_t>(h) == r.induction_head.head;
            fmt::print(out, "  {:>5}  {:>10.3f}  {:>10.3f}  {:>8.3f}  {:>13.3f}  {:>+9.3f}{}\n",
                       fmt::format("{}.{}", l, h), last.prev[l][h], last.prefix[l][h], last.copy[l][h],
                       r.ablation[l][h], r.ablation[l][h] - r.loss,
                       p   ? "  previous-token head"
                       : i ? "  induction head"
                           : "");
        }
    fmt::print(out, "  both found heads ablated: loss {:.3f} ({:+.3f}); trained model: {:.3f}\n", r.both,
               r.both - r.loss, r.loss);
}

nlohmann::json head_json(const ScoredHead& h) { return {{"layer", h.layer}, {"head", h.head}, {"score", h.score}}; }

}  // namespace

std::optional<InductionRun> induction_report(InductionObserver* observer, TrainableStack& model, const Task& task,
                                             const TrainConfig& tc, int threads, std::FILE* out, bool quiet,
                                             bool unicode) {
    (void)unicode;
    if (observer == nullptr || observer->trace().empty()) return std::nullopt;
    InductionRun r = finish_induction(model, task, observer->trace(), tc.batch, tc.seed, tc.eval_batches, threads);
    if (quiet) return r;
    fmt::print(out,
               "\nInduction heads (scores on {} probe rows of {} random symbols repeated once; copying: the share of "
               "symbols whose own logit the head's OV circuit raises most)\n",
               kInductionProbeRows, task.seq() / 2);
    print_phase(out, r);
    fmt::print(out, "  previous-token head {} (score {:.3f}), induction head {} (prefix-matching score {:.3f})\n",
               head_name(r.prev_head), r.prev_head.score, head_name(r.induction_head), r.induction_head.score);
    print_trace(out, r);
    print_heads(out, r);
    return r;
}

nlohmann::json induction_json(const InductionRun& r) {
    nlohmann::json j;
    j["phase_change"] = {{"found", r.phase.found}, {"step", r.phase.step},       {"start", r.phase.start},
                         {"end", r.phase.end},     {"plateau", r.phase.plateau}, {"final", r.phase.final}};
    j["previous_token_head"] = head_json(r.prev_head);
    j["induction_head"] = head_json(r.induction_head);
    j["loss"] = r.loss;
    j["ablation"] = {{"per_head", r.ablation}, {"both", r.both}};
    nlohmann::json trace = nlohmann::json::array();
    for (const auto& s : r.trace)
        trace.push_back({{"step", s.step}, {"loss", s.loss}, {"seconds", s.seconds}, {"previous_token", s.prev},
                         {"prefix_matching", s.prefix}, {"copying", s.copy}});
    j["trace"] = trace;
    return j;
}

std::string induction_svg(const InductionRun& r, const std::string& title, const std::string& model_line) {
    const double W = 860, H = 760;
    SvgDocument doc(W, H, title);
    doc.text(W / 2, 24, title, {.font_size = 15, .bold = true, .anchor = "middle"});
    doc.text(W / 2, 44, model_line, {.fill = "#555", .font_size = 10.5, .anchor = "middle"});
    const double last = static_cast<double>(r.trace.back().step);
    viz::Series loss{.label = "eval loss on the repeat", .color = "#1f77b4", .width = 2};
    viz::Series plateau{.label = fmt::format("ln S = {:.2f} (no use of the context)", r.phase.plateau),
                        .color = "#999", .dash = "4 3", .width = 1.2, .draw = viz::Draw::Line};
    plateau.x = {0, last}, plateau.y = {r.phase.plateau, r.phase.plateau};
    viz::Series prev{.label = fmt::format("previous-token score, head {}", head_name(r.prev_head)), .color = "#2ca02c"};
    viz::Series prefix{.label = fmt::format("prefix-matching score, head {}", head_name(r.induction_head)),
                       .color = "#d62728"};
    viz::Series copy{.label = fmt::format("copying score, head {}", head_name(r.induction_head)), .color = "#9467bd",
                     .dash = "5 3"};
    for (const auto& s : r.trace) {
        const auto x = static_cast<double>(s.step);
        loss.x.push_back(x), loss.y.push_back(s.loss);
        prev.x.push_back(x), prev.y.push_back(at(s.prev, r.prev_head));
        prefix.x.push_back(x), prefix.y.push_back(at(s.prefix, r.induction_head));
        copy.x.push_back(x), copy.y.push_back(at(s.copy, r.induction_head));
    }
    auto phase_line = [&](double top) {
        viz::Series v{.label = fmt::format("phase change, step {}", r.phase.step), .color = "#ff7f0e", .dash = "2 2",
                      .width = 1.5, .draw = viz::Draw::Line};
        v.x = {static_cast<double>(r.phase.step), static_cast<double>(r.phase.step)}, v.y = {0, top};
        return v;
    };
    viz::LineChart top;
    top.title = "loss on the repeated half";
    top.x = {.title = "step", .min = 0, .max = last};
    top.y = {.title = "cross-entropy (nats)", .zero = true};
    top.series = {loss, plateau};
    if (r.phase.found) top.series.push_back(phase_line(r.phase.plateau));
    viz::line_chart(doc, {10, 60, W - 10, 400}, top);
    viz::LineChart bottom;
    bottom.title = "head scores over training";
    bottom.x = {.title = "step", .min = 0, .max = last};
    bottom.y = {.title = "score", .min = 0, .max = 1};
    bottom.series = {prev, prefix, copy};
    if (r.phase.found) bottom.series.push_back(phase_line(1));
    viz::line_chart(doc, {10, 410, W - 10, H - 8}, bottom);
    return doc.str();
}

}  // namespace attn::cli
