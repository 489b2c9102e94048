// lessons/catalogue.hpp: the tour's languages and its message catalogue.
//
// gettext's way: the English text IS the key. A lesson is written once, in
// English; when the language is zh, every text a LessonContext prints is looked
// up here, and a text the lesson builds from numbers is looked up as its
// TEMPLATE before the numbers go in (LessonContext::f):
//
//   ctx.f("weights sum to 1 (|sum-1| = {})", e2(err))
//   // lessons/zh/01.cpp:  {"weights sum to 1 (|sum-1| = {})", "权重之和为 1（|sum-1| = {0}）"}
//
// Translations use positional arguments ({0}, {1:.3f}) because word order
// differs; they never contain figures (a test checks that every argument of the
// English appears, with the same format spec, and that no number appears that
// the English does not have). One catalogue source per lesson (lessons/zh/NN.cpp)
// and one for the framing (lessons/zh/framing.cpp: the context's own words, the
// run header and footer, `attn lessons`, the tour's introduction and summary,
// the claim texts of --quote) register themselves; lessons/zh/README.md says
// how a translator adds one.
//
// A missing translation never fails the reader: the English is printed and the
// miss recorded (missing_translations()), and tests/test_i18n.cpp fails listing
// the misses of every lesson that must be complete.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace attn::lessons {

enum class Lang { en, zh };
const char* lang_name(Lang lang);  // "en", "zh"
// "en" or "zh" (exactly); nullopt otherwise.
std::optional<Lang> parse_lang(std::string_view text);
// The language of a locale value as LANG and LC_* hold it: zh for "zh", "zh_CN.UTF-8",
// "zh_TW", ...; en for anything else (including "C", "POSIX", empty).
Lang lang_of_locale(std::string_view locale);
// The language the environment asks for: the first non-empty of LC_ALL, LC_MESSAGES,
// LANG (POSIX precedence), through lang_of_locale; en when all are unset.
Lang lang_from_environment();

// One entry: the English text (the key) and its translation.
struct Msg {
    const char* en;
    const char* tr;
};

// A file-scope object in a catalogue source registers its entries:
//   const RegisterCatalogue reg{Lang::zh, 1, {{"...", "..."}, ...}};
// part: the lesson's number, or 0 for the framing (kFramingPart).
constexpr int kFramingPart = 0;
struct RegisterCatalogue {
    RegisterCatalogue(Lang lang, int part, std::vector<Msg> entries);
};

// The translation of `english` into `lang`: the text itself for en; the catalogue's
// entry for zh, or (none there) the English, recording the miss when the text needs
// translating (needs_translation). Never throws.
std::string_view translate(Lang lang, std::string_view english);
// fmt::format with the template translated first (positional arguments in the
// translation); a translated template fmt rejects falls back to the English one
// and is recorded as a miss. For texts outside a lesson (the CLI's framing, errors).
std::string vformat_in(Lang lang, std::string_view english_template, fmt::format_args args);
template <class... A>
std::string format_in(Lang lang, std::string_view english_template, const A&... args) {
    return vformat_in(lang, english_template, fmt::make_format_args(args...));
}
// True when `text` holds an English word (a run of 3 or more ASCII letters): a text
// without one ("q × 0.25", "Dk", "[0, 3]") reads the same in every language, and its
// absence from the catalogue is not a miss.
bool needs_translation(std::string_view text);

// The misses recorded since the last clear (sorted, each once). Thread-safe.
std::vector<std::string> missing_translations();
void clear_missing_translations();
void record_missing_translation(std::string_view text);

// The parts (lesson numbers, kFramingPart) that registered a catalogue for `lang`.
std::set<int> catalogue_parts(Lang lang);
// Every entry registered for `lang`, with its part (for the tests' placeholder checks).
struct CatalogueEntry {
    int part;
    std::string en, tr;
};
std::vector<CatalogueEntry> catalogue_entries(Lang lang);
// Keys registered twice with different translations ("part N and part M: KEY"): a
// test requires none, so a text reads the same in every lesson that uses it.
std::vector<std::string> catalogue_conflicts(Lang lang);

}  // namespace attn::lessons
