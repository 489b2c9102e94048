// lessons/sheet.hpp: the tour on one screen (`attn sheet`, and the end of `attn tour`).
//
// The formula, the shapes, the mask rule, the scale, the five commonest bugs (ids of
// `attn check`'s catalogue) and the command for each idea. Every number on it is
// computed when it is printed: the shapes come from a live multi-head layer, the scale's
// effect from random q and k, the mask rule from a masked attention call, the lesson
// numbers from the registry. The text is English looked up in the catalogue (zh).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "catalogue.hpp"

namespace attn::lessons {

// The sheet's content, computed at `seed` (the random q, k and layer weights it measures).
nlohmann::json sheet_record(uint64_t seed, Lang lang);
// The sheet as text, at most `width` columns wide (80 in the tour), from sheet_record's record.
std::string sheet_text(const nlohmann::json& record, Lang lang, int width, bool color = false);

}  // namespace attn::lessons
