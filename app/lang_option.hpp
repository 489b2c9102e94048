// app/lang_option.hpp: the --lang option (en or zh) of every command that has one: the lesson commands (tour,
// lesson, lessons, claims, sheet), attn serve's pages and the --html pages; one rule, one help text.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "lesson.hpp"

namespace attn::cli {

// --lang en|zh for the lesson commands; absent, the environment's locale decides (LC_ALL, LC_MESSAGES,
// LANG: zh_* -> zh) in resolve_lang.
void add_lang_option(CLI::App& sub, std::string& lang);
// --lang en|zh whose absent value is the one `lang` already holds ("en": attn serve's pages, the --html
// pages), checked by the rule as it is parsed. Help: "WHAT: en or zh (NOTE)".
CLI::Option* add_lang_option(CLI::App& sub, std::string& lang, std::string_view what, std::string_view note = {});
// The language --lang names ("" -> the environment's); throws InputError "--lang: must be en or zh, got 'xx'".
lessons::Lang resolve_lang(const std::string& lang);

}  // namespace attn::cli
