// attn/core/dropout.hpp: the one rule for a dropout probability, which the attention's options
// (attn/core/attention.hpp), the trained model's config (attn/nn/model_config.hpp), a dump's
// config (attn/io/dump_config.hpp) and `attn forward --dropout` all check.
#pragma once

#include <string_view>

namespace attn {

// p in [0, 1), and below 1 also as a float32 (0.99999999999 is 1 as a float, and 1/(1 - 1) is
// no scale). False for NaN.
bool dropout_in_range(double p);
// The rule in words, for every message that refuses a dropout probability.
inline constexpr std::string_view kDropoutRule = "must be in [0, 1) (below 1 also as a float32)";
// InputError "WHO: <kDropoutRule>, got P" unless dropout_in_range(p); `who` names the option,
// field or argument ("--dropout", "dropout").
void check_dropout(double p, std::string_view who);

}  // namespace attn
