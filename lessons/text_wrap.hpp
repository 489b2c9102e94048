// lessons/text_wrap.hpp: greedy word wrap on display columns for a lesson's output (wide characters count 2;
// Chinese breaks between ideographs, never before closing or after opening punctuation).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn::lessons {

// `text` wrapped at `width` columns, each line prefixed by `indent` and ended by a newline; "\n" breaks.
// A bracketed group ("[0, 3]") and a short one in parentheses or backticks stay on one line.
std::string wrap(std::string_view text, int width, std::string_view indent);
// `text` wrapped after a first-line prefix `first`; continuation lines get `rest`.
std::string wrap_hanging(std::string_view text, int width, std::string_view first, std::string_view rest);
// The lines of wrap() without their newlines (a word longer than the width stays whole); at least one.
std::vector<std::string> wrap_lines(std::string_view text, int width);
// One line of code or output cut at `width` columns: broken after the last space (or, with none, at the
// width); continuation lines get `cont` more indent.
std::vector<std::string> break_line(std::string_view line, int width, int cont);

}  // namespace attn::lessons
