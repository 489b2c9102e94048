// The message catalogue: registration, lookup, recorded misses (catalogue.hpp).
#include "catalogue.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

namespace attn::lessons {

namespace {

struct Registered {
    Lang lang;
    int part;
    std::vector<Msg> entries;
};

// Registration happens before main (file-scope objects); the lookup maps are
// built once, at the first lookup, from everything registered by then.
std::vector<Registered>& registered() {
    static std::vector<Registered> r;
    return r;
}

struct Index {
    std::unordered_map<std::string_view, std::string_view> zh;
    std::vector<std::string> conflicts;
};

const Index& index() {
    static const Index idx = [] {
        Index x;
        std::unordered_map<std::string_view, int> part_of;
        for (const Registered& r : registered()) {
            if (r.lang != Lang::zh) continue;
            for (const Msg& m : r.entries) {
                const auto [it, fresh] = x.zh.emplace(m.en, m.tr);
                if (fresh) {
                    part_of[m.en] = r.part;
                } else if (it->second != std::string_view(m.tr)) {
                    x.conflicts.push_back(fmt::format("parts {} and {}: \"{}\"", part_of[m.en], r.part, m.en));
                }
            }
        }
        return x;
    }();
    return idx;
}

std::mutex& miss_mutex() {
    static std::mutex m;
    return m;
}
std::set<std::string>& misses() {
    static std::set<std::string> s;
    return s;
}

}  // namespace

const char* lang_name(Lang lang) { return lang == Lang::zh ? "zh" : "en"; }

std::optional<Lang> parse_lang(std::string_view text) {
    if (text == "en") return Lang::en;
    if (text == "zh") return Lang::zh;
    return std::nullopt;
}

Lang lang_of_locale(std::string_view locale) {
    // "zh", "zh_CN", "zh_CN.UTF-8", "zh.UTF-8", "zh@..." : the language part is "zh"
    if (locale.size() >= 2 && locale.substr(0, 2) == "zh" &&
        (locale.size() == 2 || locale[2] == '_' || locale[2] == '.' || locale[2] == '@'))
        return Lang::zh;
    return Lang::en;
}

Lang lang_from_environment() {
    for (const char* var : {"LC_ALL", "LC_MESSAGES", "LANG"}) {
        const char* v = std::getenv(var);
        if (v != nullptr && *v != '\0') return lang_of_locale(v);
    }
    return Lang::en;
}

RegisterCatalogue::RegisterCatalogue(Lang lang, int part, std::vector<Msg> entries) {
    registered().push_back({lang, part, std::move(entries)});
}

bool needs_translation(std::string_view text) {
    int run = 0;
    for (char c : text) {
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        run = letter ? run + 1 : 0;
        if (run >= 3) return true;
    }
    return false;
}

void record_missing_translation(std::string_view text) {
    const std::lock_guard<std::mutex> lock(miss_mutex());
    misses().emplace(text);
}

std::string_view translate(Lang lang, std::string_view english) {
    if (lang == Lang::en || english.empty()) return english;
    const Index& idx = index();
    const auto it = idx.zh.find(english);
    if (it != idx.zh.end()) return it->second;
    if (needs_translation(english)) record_missing_translation(english);
    return english;
}

std::string vformat_in(Lang lang, std::string_view english_template, fmt::format_args args) {
    if (lang == Lang::en) return fmt::vformat(english_template, args);
    const std::string_view t = translate(lang, english_template);
    try {
        return fmt::vformat(t, args);
    } catch (const fmt::format_error& e) {
        record_missing_translation(fmt::format("{} [the translation's template: {}]", english_template, e.what()));
        return fmt::vformat(english_template, args);
    }
}

std::vector<std::string> missing_translations() {
    const std::lock_guard<std::mutex> lock(miss_mutex());
    return {misses().begin(), misses().end()};
}

void clear_missing_translations() {
    const std::lock_guard<std::mutex> lock(miss_mutex());
    misses().clear();
}

std::set<int> catalogue_parts(Lang lang) {
    std::set<int> parts;
    for (const Registered& r : registered())
        if (r.lang == lang) parts.insert(r.part);
    return parts;
}

std::vector<CatalogueEntry> catalogue_entries(Lang lang) {
    std::vector<CatalogueEntry> out;
    for (const Registered& r : registered())
        if (r.lang == lang)
            for (const Msg& m : r.entries) out.push_back({r.part, m.en, m.tr});
    return out;
}

std::vector<std::string> catalogue_conflicts(Lang lang) {
    if (lang != Lang::zh) return {};
    return index().conflicts;
}

}  // namespace attn::lessons
