// The --lang option (lang_option.hpp): the rule "en or zh" and its help text, written once.
#include "lang_option.hpp"

#include <optional>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn::cli {

namespace {

// The rule: what --lang may be, and what is wrong with `lang` ("" when it holds).
std::string lang_rule_broken(std::string_view lang) {
    if (lessons::parse_lang(lang)) return {};
    return fmt::format("must be en or zh, got '{}'", lang);
}

std::string lang_help(std::string_view what, std::string_view note) {
    return note.empty() ? fmt::format("{}: en or zh", what) : fmt::format("{}: en or zh ({})", what, note);
}

}  // namespace

void add_lang_option(CLI::App& sub, std::string& lang) {
    sub.add_option("--lang", lang,
                   lang_help("Language of the text", "default: from LC_ALL / LC_MESSAGES / LANG, zh_* -> zh"))
        ->type_name("en|zh");
}

CLI::Option* add_lang_option(CLI::App& sub, std::string& lang, std::string_view what, std::string_view note) {
    return sub.add_option("--lang", lang, lang_help(what, note))
        ->capture_default_str()
        ->type_name("en|zh")
        // an empty value is left to the rule every option shares ("the value is empty")
        ->check(CLI::Validator([](std::string& value) { return value.empty() ? "" : lang_rule_broken(value); }, ""));
}

lessons::Lang resolve_lang(const std::string& lang) {
    if (lang.empty()) return lessons::lang_from_environment();
    if (const std::optional<lessons::Lang> l = lessons::parse_lang(lang)) return *l;
    throw InputError("--lang: " + lang_rule_broken(lang));
}

}  // namespace attn::cli
