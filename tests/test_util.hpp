// Helpers shared by the test files: random tensors, fixtures, running the CLI.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "attn/attn.hpp"

namespace attn::test {

inline Tensor randn(Shape s, uint64_t seed, uint64_t stream = 0) {
    Tensor t(std::move(s));
    Rng r(seed, stream);
    for (auto& v : t.data) v = r.normal();
    return t;
}

inline std::string source_path(const std::string& rel) { return std::string(ATTN_SOURCE_DIR) + "/" + rel; }

struct CliResult {
    int code = -1;
    std::string out;  // stdout and stderr together
};

// Runs `attn ARGS` through the shell, capturing output; ARGS is shell text.
inline CliResult run_attn(const std::string& args, const std::string& env = "") {
    const std::string cmd = env + (env.empty() ? "" : " ") + "'" + std::string(ATTN_BINARY) + "' " + args + " 2>&1";
    CliResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = pclose(p);
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

// A fresh empty directory for files a test writes.
inline std::string temp_dir(const std::string& tag) {
    std::string tmpl = "/tmp/attn-test-" + tag + "-XXXXXX";
    char* d = mkdtemp(tmpl.data());
    return d ? std::string(d) : std::string("/tmp");
}

}  // namespace attn::test
