#include "lang_option.hpp"

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn::cli {

void add_lang_option(CLI::App& sub, std::string& lang) {
    sub.add_option("--lang", lang,
                   "Language of the text: en or zh (default: from LC_ALL / LC_MESSAGES / LANG, zh_* -> zh)")
        ->type_name("en|zh");
}

lessons::Lang resolve_lang(const std::string& lang) {
    if (lang.empty()) return lessons::lang_from_environment();
    if (const auto l = lessons::parse_lang(lang)) return *l;
    throw InputError(fmt::format("--lang: must be en or zh, got '{}'", lang));
}

}  // namespace attn::cli
