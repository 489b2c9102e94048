// lessons/context_internal.hpp: what the files of LessonContext share and lessons never use: the ANSI styles
// of the text output, the record array a verdict goes to, and a lesson header's map line.
#pragma once

#include <string>

#include "attn/experiments/experiment.hpp"
#include "lesson.hpp"

namespace attn::lessons {

inline constexpr const char* kBold = "\x1b[1m";
inline constexpr const char* kGreen = "\x1b[32m";
inline constexpr const char* kRed = "\x1b[31m";
inline constexpr const char* kYellow = "\x1b[33m";
inline constexpr const char* kDim = "\x1b[2m";
inline constexpr const char* kCyan = "\x1b[36m";
inline constexpr const char* kMagenta = "\x1b[35m";

// The record array a verdict of this kind goes to ("checks", "qualified", ...): verdicts.cpp.
const char* record_key(VerdictKind k);

// The steps a lesson zooms into, as its header's map line: "map: Q·Kᵀ → ÷ √Dk … softmax"; empty when
// the lesson names none (pipeline_map.cpp).
std::string map_line(const Lesson& lesson, Lang lang);

}  // namespace attn::lessons
