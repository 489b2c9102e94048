// libFuzzer target: the `attn` command line, parse only. The input is argv
// after "attn", NUL-separated. The real CLI11 app (every subcommand's options
// and validators, built by make_app as run_cli builds it) parses it, and then
// run_cli's own checks on the parsed values run; no command's work does.
// Contract: a parse either succeeds with exactly one subcommand chosen, or
// throws CLI::ParseError (help and --version included) or attn::InputError.
// Anything else (another exception, a crash, a sanitizer report, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attn/core/errors.hpp"
#include "command.hpp"
#include "fuzz_file.hpp"  // fail()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    constexpr size_t kMaxArgs = 64;
    std::vector<std::string> args{"attn"};
    std::string cur;
    for (size_t i = 0; i < size && args.size() < kMaxArgs; ++i) {
        if (data[i] == 0) {
            args.push_back(cur);
            cur.clear();
        } else {
            cur.push_back(static_cast<char>(data[i]));
        }
    }
    if (!cur.empty() && args.size() < kMaxArgs) args.push_back(cur);  // the last one needs no NUL
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());

    // Built once: building the whole app costs ~100x a parse. CLI11's parse()
    // clears the previous parse's state (results, parsed subcommands) first; the
    // variables the options write into keep their last values, which nothing in
    // a parse reads (validators and check_parsed see only the strings given).
    static std::map<CLI::App*, attn::cli::Runner> runners;
    static const std::unique_ptr<CLI::App> app = attn::cli::make_app(runners);
    try {
        app->parse(static_cast<int>(argv.size()), argv.data());
        attn::cli::check_parsed(*app);
        int chosen = 0;
        for (const auto& [sub, run] : runners)
            if (sub->parsed()) {
                ++chosen;
                if (!run) attn::fuzz::fail("a parsed subcommand has no runner");
            }
        if (chosen != 1) attn::fuzz::fail("a successful parse chose no subcommand or several");
    } catch (const CLI::ParseError&) {
    } catch (const attn::InputError&) {
    }
    return 0;
}
