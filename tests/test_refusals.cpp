// Refusals across commands, each a table of cases: every input file is opened by one
// opener (a regular file, or a one-line refusal, never a hang on a FIFO or a device);
// a refusal of a huge size is computed from the sizes in closed form, so it costs no
// CPU time (each case runs under a CPU-time limit); long work needs --yes with the
// estimate in the message; a checkpoint's weights and config are checked where they
// enter. Every refusal is exit 2 with one line "attn: error: ..." naming the option or
// the file and the rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/io/safetensors.hpp"
#include "test_util.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

struct Refusal {
    std::string args;                 // attn ARGS (shell text)
    std::vector<std::string> names;   // each must appear in the message
};

// `attn ARGS` under a CPU-time limit of `cpu_seconds` (ulimit -t: past it the kernel
// ends the process with SIGXCPU, which is no exit code) and a wall-clock limit of
// 60 s (a hang on a FIFO is killed, exit 124): exit 2, one line naming each of `names`.
void check_refusal(const Refusal& c, int cpu_seconds = 2) {
    INFO("attn " << c.args);
    const test::CliResult r = test::run_shell("ulimit -t " + std::to_string(cpu_seconds) + "; timeout 60 '" +
                                              std::string(ATTN_BINARY) + "' " + c.args + " 2>&1");
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.rfind("attn: error: ", 0) == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    for (const std::string& n : c.names) CHECK(r.out.find(n) != std::string::npos);
}

}  // namespace

TEST_CASE("refusals: a FIFO, a folder, a device or a link to a FIFO is refused at once by every reader") {
    const std::string dir = test::temp_dir("special");
    for (const char* name : {"f.safetensors", "f.json", "f.npy", "f.txt"})
        REQUIRE(::mkfifo((dir + "/" + name).c_str(), 0600) == 0);
    fs::create_directory(dir + "/d.safetensors");
    fs::create_directory(dir + "/d.npy");
    fs::create_symlink(dir + "/f.safetensors", dir + "/link.safetensors");
    const std::string f = dir + "/f", d = dir + "/d";
    const std::vector<Refusal> cases = {
        {"train --load " + f + ".safetensors --steps 0", {"--load", f + ".safetensors", "not a regular file"}},
        {"train --load " + dir + "/link.safetensors --steps 0", {"--load", "link.safetensors", "not a regular file"}},
        {"train --load " + d + ".safetensors --steps 0", {"--load", d + ".safetensors", "folder"}},
        {"train --load /dev/zero --steps 0", {"--load", "/dev/zero", "not a regular file"}},
        {"train --task chars --corpus " + f + ".txt --steps 1", {"--corpus", f + ".txt", "not a regular file"}},
        {"forward --input " + f + ".safetensors", {"--input", f + ".safetensors", "not a regular file"}},
        {"forward --input " + dir + "/link.safetensors", {"--input", "link.safetensors", "not a regular file"}},
        {"forward --input " + f + ".json", {"--input", f + ".json", "not a regular file"}},
        {"forward --input " + f + ".npy", {"--input", f + ".npy", "not a regular file"}},
        {"forward --input " + d + ".npy", {"--input", d + ".npy", "folder"}},
        {"forward --input /dev/zero", {"--input", "/dev/zero", "not a regular file"}},
        {"forward --seq 4 --mask-file " + f + ".npy", {"--mask-file", f + ".npy", "not a regular file"}},
        {"view " + f + ".json", {f + ".json", "not a regular file"}},
        {"variants --no-speed --corpus " + f + ".txt", {"--corpus", f + ".txt", "not a regular file"}},
        {"variants --no-speed --corpus /dev/zero", {"--corpus", "/dev/zero", "not a regular file"}},
    };
    for (const Refusal& c : cases) check_refusal(c, 20);
    fs::remove_all(dir);
}

TEST_CASE("refusals: a huge size is refused from the sizes alone, under a CPU-time limit of 2 s") {
    // Each was 15 s to over a minute of CPU when the FLOP count walked every mask row first.
    const std::vector<Refusal> cases = {
        {"forward --seq 2147483647", {"--seq"}},
        {"forward --batch 2147483647 --seq 1 --d-model 1", {"--batch"}},
        {"forward --tk 2147483647", {"--tk"}},
        {"forward --batch 100000 --seq 100000", {"--seq"}},
        {"forward --batch 100000 --seq 100000 --mask causal", {"--seq"}},
        {"forward --batch 2147483647 --seq 2 --d-model 1 --mask causal", {"--batch"}},
        {"decode --layers 256 --steps 1024 --d-model 16 --heads 1", {"--steps", "FLOPs", "--yes"}},
        {"bench --seq 1000000 --impl flash --backward --heads 1 --d-k 1 --reps 1 --warmup 0",
         {"--seq", "exponentials", "--yes"}},
        {"variants --heads 256 --d-k 1024 --quick --no-model", {"--seq", "FLOPs", "--yes"}},
        {"variants --seq 4194304 --heads 256 --d-k 1024 --no-model --yes", {"--seq", "T=4194304"}},
        {"variants --variants flash,flash", {"--variants", "twice"}},
    };
    for (const Refusal& c : cases) check_refusal(c);
}

namespace {

// A small checkpoint of `attn train`, its tensors and metadata, and one rewritten.
struct CheckpointFile {
    std::vector<std::pair<std::string, Tensor>> tensors;
    std::map<std::string, std::string> meta;

    explicit CheckpointFile(const std::string& path) {
        const SafeTensors st = SafeTensors::load(path);
        for (const std::string& n : st.names()) tensors.emplace_back(n, st.to_float(n));
        meta = st.metadata();
    }
    std::string write(const std::string& path) const {
        save_safetensors(path, tensors, meta);
        return path;
    }
    CheckpointFile with_config(const std::string& key, const nlohmann::json& value) const {
        CheckpointFile c = *this;
        nlohmann::json j = nlohmann::json::parse(c.meta.at("attn.config"));
        j[key] = value;
        c.meta["attn.config"] = j.dump();
        return c;
    }
    CheckpointFile with_config_text(const std::string& key, const std::string& value_text) const {
        CheckpointFile c = with_config(key, 0);
        std::string t = c.meta.at("attn.config");
        const std::string from = "\"" + key + "\":0";
        c.meta["attn.config"] = t.replace(t.find(from), from.size(), "\"" + key + "\":" + value_text);
        return c;
    }
    CheckpointFile with_weight(const std::string& tensor, float value) const {
        CheckpointFile c = *this;
        for (auto& [n, t] : c.tensors)
            if (n == tensor) t.data[t.data.size() / 2] = value;
        return c;
    }
};

}  // namespace

TEST_CASE("refusals: a checkpoint with a non-finite or huge weight, or a config attn would not write, names the file") {
    const std::string dir = test::temp_dir("ckpt");
    const std::string good = dir + "/good.safetensors";
    const test::CliResult made =
        test::run_attn("train --task copy --steps 1 --layers 1 --d-model 8 --heads 2 --save " + good);
    INFO(made.out);
    REQUIRE(made.code == 0);
    const CheckpointFile ck(good);
    const std::string w = "blocks.0.attn.v_proj.weight";
    struct Case {
        std::string tag;
        CheckpointFile file;
        std::vector<std::string> names;
    };
    const std::vector<Case> cases = {
        {"nan", ck.with_weight(w, NAN), {w, "nan"}},
        {"inf", ck.with_weight(w, INFINITY), {w, "inf"}},
        {"huge", ck.with_weight(w, 3e38f), {w, "3e+38"}},
        {"scale0", ck.with_config("scale", "constant").with_config("scale_value", 0), {"scale"}},
        {"scale-5", ck.with_config("scale", "constant").with_config("scale_value", -5), {"scale"}},
        {"maxseq1e8", ck.with_config("max_seq", 100000000), {"max_seq", "100000000"}},
        {"maxseq2e70", ck.with_config_text("max_seq", "1180591620717411303424"), {"max_seq"}},
        {"maxseq-float", ck.with_config_text("max_seq", "16.5"), {"max_seq"}},
        {"unknown-key", ck.with_config("window", 3), {"'window'"}},
    };
    for (const Case& c : cases) {
        const std::string path = c.file.write(dir + "/" + c.tag + ".safetensors");
        std::vector<std::string> names = c.names;
        names.push_back("--load");
        names.push_back(path);
        check_refusal({"train --load " + path + " --steps 0", names});
    }
    // the task named in the metadata: the file and the key are blamed, not a --task never given
    CheckpointFile bad_task = ck;
    bad_task.meta["attn.task"] = "bogus";
    const std::string bt = bad_task.write(dir + "/task.safetensors");
    check_refusal({"train --load " + bt + " --steps 0", {"--load", bt, "attn.task", "bogus"}});
    // the good one loads
    CHECK(test::run_attn("train --load " + good + " --steps 0").code == 0);
    // an 2^70 never reads back as a negative number
    const test::CliResult r = test::run_attn("train --load " + dir + "/maxseq2e70.safetensors --steps 0");
    CHECK(r.out.find("-9223372036854775808") == std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("refusals: forward --input refuses a config key it would ignore, naming the file and the key") {
    const std::string dir = test::temp_dir("incfg");
    std::string x_data;  // x [1, 4, 8]
    for (int i = 0; i < 32; ++i) {
        if (i > 0) x_data += ',';
        x_data += std::to_string(0.1 * (i % 7));
    }
    auto input_with = [&](const std::string& tag, const std::string& config) {
        const std::string path = dir + "/" + tag + ".json";
        std::string text = R"({"format": "attn-dump", "version": 1, "config": )";
        text += config;
        text += R"(, "tensors": {"x": {"shape": [1, 4, 8], "data": [)";
        text += x_data;
        text += "]}}}";
        FILE* fp = std::fopen(path.c_str(), "w");
        std::fputs(text.c_str(), fp);
        std::fclose(fp);
        return path;
    };
    const std::string window = input_with("window", R"({"mask": "causal", "window": 3})");
    check_refusal({"forward --input " + window, {"--input", window, "config.window"}});
    const std::string unknown = input_with("unknown", R"({"heads": 2, "windwo": 3})");
    check_refusal({"forward --input " + unknown, {"--input", unknown, "config.windwo"}});
    // what --dump writes for the record is read back
    const std::string ok = input_with("ok", R"({"heads": 2, "impl": "flash", "backward": false, "generator": "x"})");
    CHECK(test::run_attn("forward --input " + ok).code == 0);
    fs::remove_all(dir);
}

namespace {

// Runs `script` with bash (process substitution, PIPESTATUS), stdout and stderr together.
test::CliResult bash(const std::string& dir, const std::string& script) {
    const std::string path = dir + "/script.sh";
    FILE* fp = std::fopen(path.c_str(), "w");
    std::fputs(("ATTN='" + std::string(ATTN_BINARY) + "'\n" + script + "\n").c_str(), fp);
    std::fclose(fp);
    return test::run_shell("bash '" + path + "' 2>&1");
}

int mode_of(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

}  // namespace

TEST_CASE(
    "refusals: outputs: devices and pipes are written in place, files take the umask or the replaced file's mode") {
    const std::string dir = test::temp_dir("outputs");
    // a device, /dev/stdout into a pipe, and bash's >(cmd) (a /dev/fd link to a pipe)
    test::CliResult r = bash(dir, "\"$ATTN\" forward --dump /dev/null >/dev/null; echo rc=$?");
    CHECK(r.out == "rc=0\n");
    r = bash(dir,
             "\"$ATTN\" forward --dump /dev/stdout | grep -c '\"format\": \"attn-dump\"'; echo rc=${PIPESTATUS[0]}");
    INFO(r.out);
    CHECK(r.out == "1\nrc=0\n");
    r = bash(dir, "\"$ATTN\" forward --dump >(cat > '" + dir + "/sub.json') >/dev/null; echo rc=$?; sleep 0.5");
    CHECK(r.out == "rc=0\n");
    CHECK(read_file(dir + "/sub.json").find("\"attn-dump\"") != std::string::npos);
    // the umask, and a replaced file's mode
    r = bash(dir, "umask 077; \"$ATTN\" forward --dump '" + dir +
                      "/u077.json' >/dev/null; umask 022; \"$ATTN\" forward "
                      "--dump '" +
                      dir + "/u022.json' >/dev/null; echo ok");
    CHECK(r.out == "ok\n");
    CHECK(mode_of(dir + "/u077.json") == 0600);
    CHECK(mode_of(dir + "/u022.json") == 0644);
    REQUIRE(::chmod((dir + "/u022.json").c_str(), 0640) == 0);
    r = bash(dir, "umask 022; \"$ATTN\" forward --dump '" + dir + "/u022.json' >/dev/null; echo ok");
    CHECK(r.out == "ok\n");
    CHECK(mode_of(dir + "/u022.json") == 0640);
    // stdout that cannot be written: exit 2 with one line, not an internal error
    r = bash(dir, "\"$ATTN\" decode --json > /dev/full; echo rc=$?");
    INFO(r.out);
    CHECK(r.out.find("attn: error: ") == 0);
    CHECK(r.out.find("rc=2\n") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("refusals: two outputs of one command in one file are refused before any work, naming both options") {
    const std::string dir = test::temp_dir("sameout");
    const std::string m = dir + "/m";
    check_refusal({"train --task copy --steps 1 --save " + m + " --json " + m, {"--json", "--save", m}});
    CHECK(!fs::exists(m));
    fs::create_symlink(m, dir + "/link");
    check_refusal({"train --task copy --steps 1 --save " + m + " --svg " + dir + "/link", {"--svg", "--save"}});
    // /dev/null twice is fine
    CHECK(
        test::run_attn("train --task copy --steps 1 --layers 1 --d-model 8 --heads 2 --save /dev/null --json /dev/null")
            .code == 0);
    fs::remove_all(dir);
}

TEST_CASE("refusals: values that would be silently replaced, and messages that would blame the wrong option") {
    const std::string dir = test::temp_dir("silent");
    FILE* fp = std::fopen((dir + "/any.txt").c_str(), "w");
    std::fputs("some text\n", fp);
    std::fclose(fp);
    {  // a .npy header whose descr holds a NUL byte
        std::string h = "{'descr': '<f4";
        h += '\0';
        h += "XYZ', 'fortran_order': False, 'shape': (2,), }";
        h += std::string(63 - h.size() % 64, ' ') + "\n";
        std::string npy = "\x93NUMPY\x01";
        npy += '\0';
        npy += static_cast<char>(h.size() & 0xff);
        npy += static_cast<char>(h.size() >> 8);
        npy += h + std::string(8, '\0');
        FILE* f = std::fopen((dir + "/nul.npy").c_str(), "wb");
        std::fwrite(npy.data(), 1, npy.size(), f);
        std::fclose(f);
    }
    const std::vector<Refusal> cases = {
        {"forward --softcap 1e-46", {"--softcap"}},
        {"train --task copy --corpus " + dir + "/any.txt --steps 1", {"--corpus", "chars"}},
        {"model embed --max-tokens 0 --text hi", {"--max-tokens"}},
        {"decode --init bogus", {"--init: "}},
        {"forward --tq 2 --tk 3 --mask pad:4,1", {"--mask", "Tk = 3"}},
        {"forward --kdim 2147483647 --tk 2", {"--kdim"}},
        {"forward --d-k 2147483647", {"--d-k"}},
        {"forward --d-model 2147483647", {"--d-model"}},
        {"forward --mask \"$(printf 'caus\\nal')\"", {"--mask", "\\x0a"}},
        // an option whose value may be left out, given an empty one: not read as the default
        {"forward --rope ''", {"--rope: the value is empty"}},
        {"forward --rope=", {"--rope: the value is empty"}},
        {"variance --json ''", {"--json: the value is empty"}},
        // a NUL in a file's bytes, quoted in the message, no longer ends the message there
        {"forward --input " + dir + "/nul.npy", {"--input", "'<f4\\x00XYZ'", "only '<f4'"}},
    };
    for (const Refusal& c : cases) check_refusal(c);
    // "--init: --init:" said the option twice
    CHECK(test::run_attn("decode --init bogus").out.find("--init: --init") == std::string::npos);
    fs::remove_all(dir);
}
