#include "attn/io/data_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace attn {

namespace fs = std::filesystem;

std::string user_data_dir() {
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && xdg[0] == '/')
        return std::string(xdg) + "/attn";
    if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0')
        return std::string(home) + "/.local/share/attn";
    return {};
}

std::vector<std::string> data_dirs() {
    std::vector<std::string> out;
    std::error_code ec;
    auto add = [&](const fs::path& p) {
        if (fs::is_directory(p, ec)) out.push_back(p.string());
    };
    if (const char* env = std::getenv("ATTN_DATA_DIR"); env != nullptr && env[0] != '\0') add(env);
    add("data");
    if (const std::string user = user_data_dir(); !user.empty()) add(user);
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        // An installed binary uses its prefix alone: a prefix that happens to sit inside a
        // checkout must not pick up the checkout's data/ (its fetched model, say).
        const fs::path installed = exe.parent_path().parent_path() / "share" / "attn" / "data";
        if (fs::is_directory(installed, ec)) {
            add(installed);
        } else {
            for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
                add(p / "data");
        }
    }
    return out;
}

std::optional<std::string> find_data(std::string_view rel) {
    std::error_code ec;
    for (const std::string& d : data_dirs()) {
        const fs::path p = fs::path(d) / fs::path(std::string(rel));
        if (fs::exists(p, ec)) return p.string();
    }
    return std::nullopt;
}

}  // namespace attn
