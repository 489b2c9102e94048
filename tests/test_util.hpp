// Helpers shared by the test files: random tensors, fixtures, running the CLI.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>
#include <sys/wait.h>

#include "attn/attn.hpp"

namespace attn::test {

inline Tensor randn(Shape s, uint64_t seed, uint64_t stream = 0) {
    Tensor t(std::move(s));
    Rng r(seed, stream);
    for (auto& v : t.data) v = r.normal();
    return t;
}

// Keys (1, 2, T, Dk) whose first component climbs (or falls) by `rate` a key, the rest small
// noise: against a query whose first component is 1, scores rise steadily along the keys
// (the flash kernels' tests of their online softmax's moving reference point).
inline Tensor rising_keys(int64_t T, int64_t Dk, float rate, uint64_t seed) {
    Tensor k = randn({1, 2, T, Dk}, seed);
    for (int64_t n = 0; n < 2 * T; ++n)
        for (int64_t d = 0; d < Dk; ++d) {
            float& x = k.data[static_cast<size_t>(n * Dk + d)];
            x = 0.05f * x + (d == 0 ? rate * static_cast<float>(n % T) : 0.0f);
        }
    return k;
}

// The mask kinds the kernel tests run, in this order: none, causal, key padding to `lengths`
// (one per batch row), causal + that padding, a random boolean [B, Tq, Tk] mask (70% allowed),
// a random boolean key padding [B, 1, Tk] (60% kept), a random additive [1, Tq, Tk] mask, and
// that additive mask with causal. The random parts come from Rng(seed).
inline std::vector<std::pair<std::string, Mask>> mask_grid(int64_t B, int64_t Tq, int64_t Tk,
                                                          const std::vector<int64_t>& lengths, uint64_t seed) {
    std::vector<std::pair<std::string, Mask>> masks;
    masks.push_back({"none", Mask::none()});
    masks.push_back({"causal", Mask::make_causal()});
    const Mask pad = Mask::key_padding(lengths);
    masks.push_back({"pad", pad});
    masks.push_back({"causal+pad", Mask::make_causal().combined(pad)});
    Rng r(seed);
    std::vector<uint8_t> dense(static_cast<size_t>(B * Tq * Tk));
    for (auto& x : dense) x = r.uniform() < 0.7f;
    masks.push_back({"dense", Mask::custom(B, Tq, Tk, dense)});
    std::vector<uint8_t> keep(static_cast<size_t>(B * Tk));
    for (auto& x : keep) x = r.uniform() < 0.6f;
    masks.push_back({"dense [B,1,Tk]", Mask::key_padding_bool(B, Tk, keep)});  // as PyTorch's key padding mask
    std::vector<float> add(static_cast<size_t>(Tq * Tk));
    for (auto& x : add) x = r.normal();
    const Mask addm = Mask::additive_mask(1, Tq, Tk, add);
    masks.push_back({"additive", addm});
    masks.push_back({"additive+causal", addm.combined(Mask::make_causal())});
    return masks;
}

inline std::string source_path(const std::string& rel) { return std::string(ATTN_SOURCE_DIR) + "/" + rel; }

struct CliResult {
    int code = -1;
    std::string out;  // stdout and stderr together
};

// Runs a shell command line, capturing its stdout (add 2>&1 to merge stderr).
inline CliResult run_shell(const std::string& cmd) {
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

// Runs `attn ARGS` (ARGS is shell text), stdout and stderr together.
inline CliResult run_attn(const std::string& args, const std::string& env = "") {
    return run_shell(env + (env.empty() ? "" : " ") + "'" + std::string(ATTN_BINARY) + "' " + args + " 2>&1");
}

// Marks the running test case as skipped. A test case that cannot run here (no model,
// no GPU, a CPU without the instructions of the kernel it tests) calls skip(why) and
// returns at once, before any check; in a SUBCASE, end that SUBCASE's body instead (a
// return would leave the SUBCASEs after it unrun). The runner prints "SKIPPED: <test
// case>: <why>", and ctest reports a test case that skipped and checked nothing as
// skipped, not passed (test_main.cpp says how).
void skip(const std::string& why);

// True when the model of scripts/fetch-model.sh is in data/models; otherwise skips the
// test case and returns false:  if (!attn::test::model_or_skip()) return;
// The library (and attn, which tests run as a child) is pointed at that same folder
// through ATTN_MODEL_DIR, unless the caller set it: a build folder outside the source
// tree would otherwise look for data/models beside itself.
[[nodiscard]] inline bool model_or_skip() {
    const char* env = std::getenv("ATTN_MODEL_DIR");
    const std::string dir = env != nullptr && env[0] != '\0' ? env : source_path("data/models/all-MiniLM-L6-v2");
    std::error_code ec;
    for (const char* file : {"config.json", "vocab.txt", "model.safetensors"})
        if (!std::filesystem::is_regular_file(dir + "/" + file, ec)) {
            skip("no model in " + dir + " (run scripts/fetch-model.sh)");
            return false;
        }
    setenv("ATTN_MODEL_DIR", dir.c_str(), /*overwrite=*/0);
    return true;
}

// A fresh empty directory for files a test writes.
inline std::string temp_dir(const std::string& tag) {
    std::string tmpl = "/tmp/attn-test-" + tag + "-XXXXXX";
    char* d = mkdtemp(tmpl.data());
    return d ? std::string(d) : std::string("/tmp");
}

}  // namespace attn::test
