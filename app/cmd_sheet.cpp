// `attn sheet`: the tour on one screen (lessons/sheet.hpp): the formula, the shapes, the
// mask rule, the scale, the five commonest bugs and the command for each idea, every
// number measured when it prints. `attn tour` ends with the same sheet.
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "command.hpp"
#include "lang_option.hpp"
#include "options.hpp"
#include "sheet.hpp"

namespace {

struct SheetFlags {
    uint64_t seed = 0;
    bool no_color = false;
    std::string lang;
    attn::cli::JsonOut json;
};

int run_sheet(const SheetFlags& f) {
    using attn::lessons::Lang;
    const Lang lang = attn::cli::resolve_lang(f.lang);
    attn::cli::require_json_writable(f.json);
    const nlohmann::json record = attn::lessons::sheet_record(f.seed, lang);
    if (f.json.given()) {
        nlohmann::json doc = record;
        doc["lang"] = attn::lessons::lang_name(lang);
        attn::cli::write_json(f.json, doc, "attn-sheet", 1);
        if (f.json.to_stdout()) return 0;
    }
    std::cout << attn::lessons::sheet_text(record, lang, 80, attn::cli::stdout_color(f.no_color));
    return 0;
}

const attn::cli::Command sheet_cmd{
    "sheet", "The tour on one screen: formula, shapes, mask rule, scale, five common bugs, a command per idea", 5,
    [](CLI::App& sub) -> attn::cli::Runner {
        auto f = std::make_shared<SheetFlags>();
        sub.add_option("--seed", f->seed, "Seed of the random tensors the sheet's numbers are measured on")
            ->capture_default_str()
            ->check(attn::cli::seed_validator());
        attn::cli::add_json(sub, f->json, "attn-sheet: the sheet's numbers and texts");
        sub.add_flag("--no-color", f->no_color,
                     "No ANSI colour (also off when stdout is not a TTY or NO_COLOR is set)");
        attn::cli::add_lang_option(sub, f->lang);
        return [f] { return run_sheet(*f); };
    }};

}  // namespace
