// train_induction.hpp: what `attn train --task induction` adds to its report: the phase
// change, the previous-token and induction heads found, their scores over training and
// the loss each head's ablation costs (attn/train/induction.hpp).
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/train/induction.hpp"

namespace attn::cli {

// observer null: nothing (another task). Else the run analysed, printed to out unless quiet.
std::optional<InductionRun> induction_report(InductionObserver* observer, TrainableStack& model, const Task& task,
                                             const TrainConfig& tc, int threads, std::FILE* out, bool quiet,
                                             bool unicode);
nlohmann::json induction_json(const InductionRun& r);
// Two panels: the loss on the repeat with ln S and the phase change marked; the scores of the
// two heads found over training (previous-token of the layer-0 head; prefix-matching and
// copying of the induction head).
std::string induction_svg(const InductionRun& r, const std::string& title, const std::string& model_line);

}  // namespace attn::cli
