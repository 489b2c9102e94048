// app/lang_option.hpp: the --lang option of the commands that print lesson text (tour, lesson,
// lessons, claims, sheet), declared and read the same way everywhere.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "lesson.hpp"

namespace attn::cli {

// --lang en|zh; absent, the environment's locale decides (LC_ALL, LC_MESSAGES, LANG: zh_* -> zh).
void add_lang_option(CLI::App& sub, std::string& lang);
// The language --lang names ("" -> the environment's); throws InputError "--lang: must be en or zh".
lessons::Lang resolve_lang(const std::string& lang);

}  // namespace attn::cli
