// `attn train` as a user runs it: every bad input is one line and exit 2 before
// any step (and writes nothing); a short run writes its JSON, SVG, checkpoint
// and dump; a saved model loads and shows its attention in `attn view`; Ctrl-C
// stops cleanly and still saves.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "attn/io/data_files.hpp"
#include "attn/io/dump.hpp"
#include "attn/train/checkpoint.hpp"
#include "test_util.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

// A small, fast model for the runs below.
const std::string kSmall = "--layers 1 --d-model 16 --heads 2 --batch 8 --threads 1 ";

}  // namespace

TEST_CASE("train cli: every bad input exits 2 with one line naming the option, before any step") {
    const std::string dir = test::temp_dir("train-bad");
    const std::string svg = dir + "/never.svg";
    const std::string corpus = test::source_path("data/macbeth.txt");
    const std::string tiny = dir + "/tiny.txt";
    write_file_atomic(tiny, std::string(200, 'a'));
    struct Case {
        std::string args, must_mention;
    };
    const std::vector<Case> cases = {
        {"train", "--task"},                                          // no task
        {"train --task nope", "--task"},
        {"train --task recall --heads 5", "--heads"},                 // 64 % 5
        {"train --task recall --d-model 30 --heads 4", "--heads"},
        {"train --task recall --lr 0", "--lr"},
        {"train --task recall --lr -0.1", "--lr"},
        {"train --task recall --lr nan", "--lr"},
        {"train --task recall --lr inf", "--lr"},
        {"train --task recall --lr 1e-50", "--lr"},                   // 0 as a float
        {"train --task recall --steps 0", "--steps"},
        {"train --task recall --steps -3", "--steps"},
        {"train --task recall --batch 0", "--batch"},
        {"train --task recall --batch 1000000", "--batch"},
        {"train --task recall --seq 3", "--seq"},                     // recall needs 4
        {"train --task copy --seq 2", "--seq"},
        {"train --task recall --seq 5000", "--seq"},
        {"train --task recall --seq ''", "--seq"},
        {"train --task distance --seq 16 --distance 16", "--distance"},
        {"train --task recall --symbols 1", "--symbols"},
        {"train --task chars --arch encoder --corpus " + corpus, "--arch"},
        {"train --task chars --corpus /nonexistent/text.txt", "--corpus"},
        {"train --task chars --seq 32 --corpus " + tiny, "--corpus"},   // its last tenth holds no window of 33
        {"train --task recall --arch sideways", "--arch"},
        {"train --task recall --dropout 1", "--dropout"},
        {"train --task recall --scale fast", "--scale"},
        {"train --task recall --scale cosine-learned:0", "--scale"},
        {"train --task recall --scale cosine-learned:x", "--scale"},
        {"train --task recall --init glorot", "--init"},
        {"train --task recall --optimizer adam", "--optimizer"},
        {"train --task recall --momentum 0.5", "--momentum"},         // AdamW has no momentum
        {"train --task recall --optimizer sgd --momentum 1", "--momentum"},
        {"train --task recall --clip -1", "--clip"},
        {"train --task recall --weight-decay -1", "--weight-decay"},
        {"train --task recall --warmup 20 --steps 10", "--warmup"},
        {"train --task recall --qk-gain 0", "--qk-gain"},
        {"train --task recall --layer 2", "--layer"},                 // 2 layers: 0..1
        {"train --task recall --save /nonexistent-dir/m.safetensors --svg " + svg, "--save"},
        {"train --task recall --save -", "--save"},
        {"train --task recall --svg /nonexistent-dir/x.svg", "--svg"},
        {"train --task recall --json /tmp", "--json"},                // a folder
        {"train --task recall --dump /nonexistent-dir/d.json", "--dump"},
        {"train --task recall --lr 0 --svg " + svg, "--lr"},          // and the valid --svg is not written
        {"train --task recall --load /nonexistent.safetensors", "--load"},
        {"train --task recall --load " + corpus, "--load"},           // not a checkpoint
        {"train --task recall --threads -1", "--threads"},
        {"train --task recall --seed -1", "--seed"},
    };
    for (const auto& c : cases) {
        INFO(c.args);
        const auto r = test::run_attn(c.args);
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK(r.out.rfind("attn: error: ", 0) == 0);
        CHECK(r.out.find(c.must_mention) != std::string::npos);
        CHECK(count_lines(r.out) == 1);
    }
    CHECK_FALSE(fs::exists(svg));
    fs::remove_all(dir);
}

TEST_CASE("data files: ATTN_DATA_DIR is searched first, by the library and by attn train's corpus") {
    const std::string dir = attn::test::temp_dir("datadir");
    {
        std::ofstream f(dir + "/macbeth.txt");
        for (int k = 0; k < 4; ++k) f << "to be or not to be, that is the question; whether 'tis nobler in the mind\n";
    }
    setenv("ATTN_DATA_DIR", dir.c_str(), 1);
    CHECK(attn::data_dirs().front() == dir);
    CHECK(attn::find_data("macbeth.txt") == dir + "/macbeth.txt");
    CHECK(attn::find_data("no-such-file.txt") == std::nullopt);
    unsetenv("ATTN_DATA_DIR");
    CHECK(attn::find_data("macbeth.txt") != dir + "/macbeth.txt");  // the repository's (or the installed) one
    const auto r = attn::test::run_attn("train --task chars --seq 8 --steps 1 --eval-every 0 --threads 1",
                                        "ATTN_DATA_DIR='" + dir + "'");
    CHECK(r.code == 0);
    CHECK(r.out.find("  text: " + dir + "/macbeth.txt\n") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("train cli: --list-tasks and --help describe every task") {
    const auto r = test::run_attn("train --list-tasks");
    CHECK(r.code == 0);
    for (const char* t : {"copy", "reverse", "sort", "recall", "distance", "chars"})
        CHECK(r.out.find(t) != std::string::npos);
    const auto h = test::run_attn("train --help");
    CHECK(h.code == 0);
    for (const char* opt :
         {"--task", "--lr", "--optimizer", "--save", "--load", "--json", "--svg", "--dump", "--eval-every"})
        CHECK(h.out.find(opt) != std::string::npos);
}

TEST_CASE("train cli: a short run writes its JSON, SVG and checkpoint, and the model reloads into attn view") {
    const std::string dir = test::temp_dir("train-run");
    const std::string json = dir + "/run.json", svg = dir + "/loss.svg", model = dir + "/m.safetensors";
    const auto r = test::run_attn("train --task copy --seq 9 --symbols 6 " + kSmall +
                                  "--steps 40 --eval-every 10 --seed 3 --json " + json + " --svg " + svg +
                                  " --save " + model + " --ascii");
    INFO(r.out);
    REQUIRE(r.code == 0);
    // Piped: plain lines at each evaluation, no carriage returns; the table, the sparkline and the entropies.
    CHECK(r.out.find('\r') == std::string::npos);
    CHECK(r.out.find("step      10/40") != std::string::npos);
    CHECK(r.out.find("step      40/40") != std::string::npos);
    CHECK(r.out.find("training loss") != std::string::npos);
    CHECK(r.out.find("per-head attention entropy") != std::string::npos);
    CHECK(r.out.find("\xe2\x96") == std::string::npos);  // --ascii: no Unicode block element

    const nlohmann::json j = nlohmann::json::parse(read_file(json));
    CHECK(j["format"] == "attn-train");
    CHECK(j["task"]["name"] == "copy");
    CHECK(j["result"]["steps_done"] == 40);
    REQUIRE(j["curve"].size() == 5);  // steps 0, 10, 20, 30, 40
    CHECK(j["curve"][0]["step"] == 0);
    CHECK(j["curve"][4]["step"] == 40);
    CHECK(j["step_loss"].size() == 40);
    CHECK(j["head_entropy"].size() == 2);  // 1 layer x 2 heads
    CHECK(j["curve"][4]["eval"].contains("exact_match"));
    const std::string s = read_file(svg);
    CHECK(s.rfind("<?xml", 0) == 0);
    CHECK(s.find("</svg>") != std::string::npos);
    CHECK(s.find("<polyline") != std::string::npos);

    // The checkpoint holds the task; --load --steps 0 takes it from there and dumps the attention.
    const Checkpoint ck = load_checkpoint(model);
    CHECK(ck.metadata.at("attn.task") == "copy");
    const std::string dump = dir + "/att.json";
    const auto l = test::run_attn("train --load " + model + " --steps 0 --threads 1 --batch 8 --seed 3 --dump " + dump +
                                  " --json " + dir + "/again.json");
    INFO(l.out);
    REQUIRE(l.code == 0);
    // Same model, same held-out batches: the same final eval loss as the run that saved it.
    const nlohmann::json again = nlohmann::json::parse(read_file(dir + "/again.json"));
    CHECK(again["result"]["final"]["loss"] == j["result"]["final"]["loss"]);
    const Dump d = read_dump_file(dump);
    CHECK(d.tensors.at("weights").shape == Shape{4, 2, 9, 9});
    CHECK(d.config["tokens"].size() == 4);
    const auto v = test::run_attn("view " + dump + " --no-color");
    INFO(v.out);
    CHECK(v.code == 0);
    CHECK(v.out.find("SEP") != std::string::npos);  // token labels from the task
    fs::remove_all(dir);
}

TEST_CASE("train cli: --scale cosine-learned trains the temperature, saves it and reloads it") {
    const std::string dir = test::temp_dir("train-tau");
    const std::string json = dir + "/run.json", model = dir + "/m.safetensors";
    const auto r = test::run_attn("train --task copy --seq 9 --symbols 6 " + kSmall +
                                  "--scale cosine-learned:0.2 --steps 30 --seed 3 --json " + json + " --save " + model);
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("temperature learned per layer") != std::string::npos);
    CHECK(r.out.find("learned cosine temperature tau per layer (from 0.2):") != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(read_file(json));
    CHECK(j["model"]["learn_temperature"] == true);
    CHECK(j["model"]["scale"] == "cosine");
    REQUIRE(j["learned_tau"].size() == 1);  // one layer
    const double tau = j["learned_tau"][0].get<double>();
    CHECK(tau > 0);
    CHECK(std::fabs(tau - 0.2) > 1e-4);  // AdamW moves log tau by about lr per step
    const auto l = test::run_attn("train --load " + model + " --steps 0 --threads 1 --json " + dir + "/again.json");
    INFO(l.out);
    REQUIRE(l.code == 0);
    const nlohmann::json again = nlohmann::json::parse(read_file(dir + "/again.json"));
    CHECK(again["learned_tau"][0].get<double>() == tau);
    fs::remove_all(dir);
}

TEST_CASE("train cli: the same curve at 1 and 2 threads") {
    const std::string dir = test::temp_dir("train-threads");
    std::vector<nlohmann::json> curves;
    for (int t : {1, 2}) {
        const std::string json = dir + "/t" + std::to_string(t) + ".json";
        const auto r = test::run_attn(
            "train --task recall --seq 8 --layers 1 --d-model 16 --heads 2 --batch 8 --steps 20 "
            "--eval-every 5 --dropout 0.1 --quiet --threads " +
            std::to_string(t) + " --json " + json);
        REQUIRE(r.code == 0);
        auto j = nlohmann::json::parse(read_file(json));
        for (auto& p : j["curve"]) p.erase("seconds");
        curves.push_back(j["curve"]);
        CHECK(j["step_loss"].size() == 20);
    }
    CHECK(curves[0] == curves[1]);
    fs::remove_all(dir);
}

TEST_CASE("train cli: Ctrl-C stops after the current step, prints the table and saves the model") {
    const std::string dir = test::temp_dir("train-sigint");
    const std::string model = dir + "/m.safetensors", log = dir + "/out.txt";
    // Job control (set -m) gives the background run the default SIGINT action, as a terminal would;
    // the signal is sent once the first evaluation line shows training under way.
    const std::string cmd = "bash -c 'set -m; \"" + std::string(ATTN_BINARY) + "\" train --task recall --seq 8 " +
                            kSmall + "--steps 10000000 --eval-every 50 --save " + model + " > " + log +
                            " 2>&1 & pid=$!; "
                            "for i in $(seq 300); do grep -q ^step " +
                            log +
                            " && break; sleep 0.1; done; "
                            "kill -INT $pid; wait $pid; echo rc=$?'";
    const auto r = test::run_shell(cmd);
    const std::string out = read_file(log);
    INFO(out);
    CHECK(r.out.find("rc=0") != std::string::npos);
    CHECK(out.find("stopped by Ctrl-C after step") != std::string::npos);
    CHECK(out.find("eval loss") != std::string::npos);  // the table
    REQUIRE(fs::exists(model));
    const Checkpoint ck = load_checkpoint(model);
    CHECK(std::stoll(ck.metadata.at("attn.train.steps")) > 0);
    for (const auto& e : fs::directory_iterator(dir))  // no temp file left behind
        CHECK(e.path().filename().string().find(kTempFilePrefix) == std::string::npos);
    fs::remove_all(dir);
}
