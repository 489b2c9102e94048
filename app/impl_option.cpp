// The --impl option, read from the backend table (see impl_option.hpp).
#include "impl_option.hpp"

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "parse.hpp"

namespace attn::cli {

namespace {

std::string unknown(std::string_view name) {
    return fmt::format("unknown implementation '{}' (one of: {})", name, backend_names());
}

}  // namespace

CLI::Validator backend_validator(bool list) {
    return CLI::Validator(
        [list](std::string& value) {
            for (std::string_view name : list ? split_commas(value) : std::vector<std::string_view>{value})
                if (!find_backend(name)) return unknown(name);
            return std::string();
        },
        "");  // no description: the option's type_name says IMPL or LIST
}

Backend backend_of(std::string_view name) {
    const auto b = find_backend(name);
    if (!b) throw InputError(unknown(name));
    return *b;
}

std::vector<Backend> backends_of(std::string_view list) {
    std::vector<Backend> out;
    for (std::string_view name : split_commas(list)) out.push_back(backend_of(name));
    return out;
}

std::string backend_help(std::string_view lead) {
    std::string s = fmt::format("{} (records: keeps every (T, T) step):", lead);
    for (const BackendInfo& row : backends())
        s += fmt::format("\n{:<16}{:<5}{:<5}{:<8}{}", row.name, device_name(row.device),
                         precision_name(row.precision), row.records ? "records" : "", row.summary);
    return s;
}

void require_available(std::string_view opt, Backend b) {
    std::string why;
    if (!backend_available(b, &why))
        throw InputError(fmt::format("{}: {} cannot run here: {}", opt, backend_name(b), why));
}

}  // namespace attn::cli
