// attn check: the learner files of scripts/make-check-fixtures.py (an independent numpy
// implementation, one mistake each) are diagnosed with exactly their own mistake; correct
// ones pass every stage; a mistake outside the catalogue gets the right first divergent
// stage and no specific diagnosis; bad input is one line and exit 2.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/check/check.hpp"
#include "attn/core/attention.hpp"
#include "test_util.hpp"

namespace {

using attn::check::CheckReport;

std::string fixture(const std::string& name) {
    return attn::test::source_path("tests/fixtures/check/" + name + ".npz");
}

CheckReport check_fixture(const std::string& name) {
    const auto lf = attn::check::read_learner_file(fixture(name), {});
    return attn::check::check_problem(lf.problem, lf.stages);
}

// The stage each mistake first changes, in the fixtures' pipeline.
const std::vector<std::pair<std::string, std::string>> kFixtures = {
    {"weight-not-transposed", "Q"}, {"missing-bias", "Q"},          {"split-no-transpose", "Q"},
    {"kv-repeat-order", "scores"},  {"scores-transposed", "scores"}, {"no-scale", "scores_scaled"},
    {"scale-by-dk", "scores_scaled"}, {"scale-by-dmodel", "scores_scaled"}, {"mask-zero-fill", "scores_masked"},
    {"mask-missing", "scores_masked"}, {"mask-after-softmax", "scores_masked"},
    {"causal-off-by-one", "scores_masked"}, {"mask-on-queries", "scores_masked"}, {"mask-inverted", "scores_masked"},
    {"softmax-query-axis", "weights"}, {"no-softmax", "weights"}, {"unstable-softmax", "weights"},
    {"merge-no-transpose", "merged"}, {"no-output-projection", "out"}, {"no-scale-f64", "scores_scaled"},
};

}  // namespace

TEST_CASE("check: every catalogued mistake has a fixture, and each fixture names exactly its own mistake") {
    for (const auto& m : attn::check::catalogue()) {
        bool found = false;
        for (const auto& [name, stage] : kFixtures) found = found || name == m.id;
        CHECK_MESSAGE(found, m.id);
    }
    for (const auto& [name, stage] : kFixtures) {
        CAPTURE(name);
        const CheckReport r = check_fixture(name);
        const std::string id = name == "no-scale-f64" ? "no-scale" : name;
        CHECK(r.first_divergence == stage);
        REQUIRE(r.diagnosis.size() == 1);
        CHECK(r.diagnosis[0].id == id);
        CHECK(r.diagnosis[0].text.find("lesson") != std::string::npos);
        CHECK(r.f64 == (name == "no-scale-f64"));
    }
}

TEST_CASE("check: the docs list every mistake of the catalogue, and the README counts them") {
    std::ifstream in(attn::test::source_path("docs/commands/check.md"));
    std::stringstream doc;
    doc << in.rdbuf();
    for (const auto& m : attn::check::catalogue())
        CHECK_MESSAGE(doc.str().find("| `" + m.id + "` |") != std::string::npos, m.id);
    std::ifstream rin(attn::test::source_path("README.md"));
    std::stringstream readme;
    readme << rin.rdbuf();
    CHECK(readme.str().find("(" + std::to_string(attn::check::catalogue().size()) + " of them") != std::string::npos);
}

TEST_CASE("check: correct numpy implementations pass every stage, float32 and float64") {
    for (const char* name : {"correct-f32", "correct-f64", "correct-pad", "correct-gqa", "correct-large"}) {
        CAPTURE(name);
        const CheckReport r = check_fixture(name);
        CHECK(r.first_divergence.empty());
        CHECK(r.diagnosis.empty());
        REQUIRE(r.stages.size() == 10);
        for (const auto& s : r.stages) {
            CAPTURE(s.name);
            CHECK(s.status == "pass");
            CHECK(s.max_abs_diff <= s.tolerance);
        }
        CHECK(r.rtol == (std::string(name) == "correct-f64" ? 1e-5 : 1e-4));
    }
}

TEST_CASE("check: a mistake outside the catalogue gets its first divergent stage and only what the numbers show") {
    const CheckReport r = check_fixture("outside-temperature");
    CHECK(r.first_divergence == "scores_scaled");
    CHECK(r.diagnosis.empty());
    bool factor = false;
    for (const std::string& o : r.observations) factor = factor || o.find("constant factor 0.5 ") != std::string::npos;
    CHECK_MESSAGE(factor, attn::check::report_text(r));
}

TEST_CASE("check: with no mistake made, the catalogue's pipeline is the reference, and the reference is core's") {
    const auto lf = attn::check::read_learner_file(fixture("correct-gqa"), {});
    const auto ref = attn::check::reference_stages(lf.problem);
    // every mistake changes at least one stage of the fixture problems it applies to (the softmax
    // without its max subtracted only where the scores overflow exp: correct-large)
    for (const auto& m : attn::check::catalogue()) {
        for (const std::string f : {"correct-f32", "correct-pad", "correct-gqa", "correct-large"}) {
            if (m.id == "unstable-softmax" && f != "correct-large") continue;
            const auto p = attn::check::read_learner_file(fixture(f), {}).problem;
            auto st = attn::check::mistaken_stages(p, m.id, 0);
            if (!st) continue;
            const auto r = attn::check::compare_stages(attn::check::stage_names(), attn::check::reference_stages(p),
                                                       *st, {}, false);
            CHECK_MESSAGE(!r.first_divergence.empty(), (m.id + " on " + f));
        }
    }
    // the weights agree with attention_reference run in float32 on the same Q, K, V
    attn::Tensor q({1, 4, 6, 4}), k({1, 2, 6, 4}), v({1, 2, 6, 4});
    for (size_t i = 0; i < q.data.size(); ++i) q.data[i] = static_cast<float>(ref.at("Q").v[i]);
    for (size_t i = 0; i < k.data.size(); ++i) k.data[i] = static_cast<float>(ref.at("K").v[i]);
    for (size_t i = 0; i < v.data.size(); ++i) v.data[i] = static_cast<float>(ref.at("V").v[i]);
    attn::AttentionRecord rec;
    attn::attention_reference(q, k, v, attn::Mask::make_causal(), {}, &rec);
    double worst = 0;
    for (size_t i = 0; i < rec.weights.data.size(); ++i)
        worst = std::max(worst, std::fabs(rec.weights.data[i] - ref.at("weights").v[i]));
    CHECK(worst < 1e-5);
}

TEST_CASE("check: attn check prints the table and the diagnosis, --json is the attn-check document") {
    const auto ok = attn::test::run_attn("check '" + fixture("correct-f32") + "'");
    CHECK(ok.code == 0);
    CHECK(ok.out.find("every stage you gave matches the reference") != std::string::npos);
    const auto bad = attn::test::run_attn("check '" + fixture("no-scale") + "' --json");
    CHECK(bad.code == 3);
    const auto j = nlohmann::json::parse(bad.out);
    CHECK(j["format"] == "attn-check");
    CHECK(j["version"] == 1);
    CHECK(j["first_divergence"] == "scores_scaled");
    REQUIRE(j["diagnosis"].size() == 1);
    CHECK(j["diagnosis"][0]["id"] == "no-scale");
    REQUIRE(j["stages"].size() == 10);
    for (const auto& s : j["stages"]) {
        CHECK(s.size() == 5);
        for (const char* key : {"name", "status", "max_abs_diff", "shape", "expected_shape"}) CHECK(s.contains(key));
    }
    CHECK(j["stages"][0]["name"] == "Q");
    CHECK(j["stages"][4]["status"] == "fail");
    // an option overrides the file's config: with no mask, the causal learner diverges at scores_masked
    const auto nomask = attn::test::run_attn("check '" + fixture("correct-f32") + "' --mask none --json");
    CHECK(nomask.code == 3);
    CHECK(nlohmann::json::parse(nomask.out)["first_divergence"] == "scores_masked");
}

TEST_CASE("check: what attn forward --dump writes passes every stage, GQA and padding too") {
    const std::string dir = attn::test::temp_dir("check-forward");
    for (const std::string& args : {std::string("--seq 5 --heads 2 --mask causal --dump ") + dir + "/a.npz",
                                    std::string("--seq 5 --heads 4 --kv-heads 2 --mask pad:3,5 --dump ") + dir +
                                        "/b.safetensors",
                                    std::string("--seq 4 --heads 2 --no-bias --scale 0.3 --dump ") + dir + "/c.json"}) {
        CAPTURE(args);
        REQUIRE(attn::test::run_attn("forward " + args).code == 0);
        const std::string file = args.substr(args.rfind(' ') + 1);
        const auto r = attn::test::run_attn("check '" + file + "' --json");
        CHECK(r.code == 0);
        const auto j = nlohmann::json::parse(r.out);
        CHECK(j["first_divergence"].is_null());
        for (const auto& s : j["stages"]) CHECK(s["status"] == "pass");
    }
}

TEST_CASE("check: bad input is one line naming the tensor and the rule, exit 2") {
    const std::string dir = attn::test::temp_dir("check");
    auto write = [&](const std::string& name, const std::string& body) {
        const std::string path = dir + "/" + name;
        attn::write_file_atomic(path, body);
        return path;
    };
    auto dump = [](const std::string& tensors, const std::string& config = "{}") {
        return R"({"format":"attn-dump","version":1,"config":)" + config + R"(,"tensors":{)" + tensors + "}}";
    };
    const std::string x = R"("x":{"shape":[2,4],"data":[1,2,3,4,5,6,7,8]})";
    const std::string wq = R"("W_q":{"shape":[2,4],"data":[1,0,0,0,0,1,0,0]})";
    const std::string wk = R"("W_k":{"shape":[2,4],"data":[1,0,0,0,0,1,0,0]})";
    const std::string wv = R"("W_v":{"shape":[2,4],"data":[1,0,0,0,0,1,0,0]})";
    const std::string wts = R"("weights":{"shape":[1,1,2,2],"data":[1,0,0.5,0.5]})";
    struct Case {
        std::string name, body, expect;
    };
    const std::vector<Case> cases = {
        {"noinputs.json", dump(wts), "nothing to recompute from"},
        {"nowk.json", dump(x + "," + wq + "," + wv + "," + wts), "W_k: missing"},
        {"nan.json",
         dump(R"("x":{"shape":[2,4],"data":[1,"NaN",3,4,5,6,7,8]},)" + wq + "," + wk + "," + wv + "," + wts),
         "x: holds NaN or inf"},
        {"shape.json", dump(x + R"(,"W_q":{"shape":[2,3],"data":[1,0,0,0,1,0]},)" + wk + "," + wv + "," + wts),
         "W_q: shape [2, 3] does not fit"},
        {"heads.json", dump(x + "," + wq + "," + wk + "," + wv + "," + wts, R"({"heads":3})"), "not a multiple of 3"},
        {"unknown.json", dump(x + "," + wq + "," + wk + "," + wv + R"(,"probs":{"shape":[1],"data":[1]})"),
         "probs: not a tensor attn check reads"},
        {"nostages.json", dump(x + "," + wq + "," + wk + "," + wv), "nothing to check"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const auto r = attn::test::run_attn("check '" + write(c.name, c.body) + "'");
        CHECK(r.code == 2);
        CHECK(r.out.find(c.expect) != std::string::npos);
        CHECK(r.out.rfind("attn: error: ", 0) == 0);
        CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    }
    const auto npy = attn::test::run_attn("check " + dir + "/a.npy");
    CHECK(npy.code == 2);
    const auto mask = attn::test::run_attn("check '" + fixture("correct-f32") + "' --mask pad:9");
    CHECK(mask.code == 2);
    CHECK(mask.out.find("a padding length 9 is more than the 6 keys") != std::string::npos);
}

TEST_CASE("check: every form of every mistake is named, and alone, where its fingerprint is its own") {
    // On the fixtures' problems (T 6, Dk 8 or 4, H 2 or 4, D 16): the only pair that cannot be told
    // apart is the GQA problem's scale-by-dk and scale-by-dmodel (Dk = 4 = √D there), which are
    // then both named; the softmax without its max changes nothing where no score overflows.
    for (const std::string f : {"correct-f32", "correct-pad", "correct-gqa", "correct-large"}) {
        const auto p = attn::check::read_learner_file(fixture(f), {}).problem;
        for (const auto& m : attn::check::catalogue())
            for (int form = 0; form < attn::check::mistake_forms(m.id); ++form) {
                auto st = attn::check::mistaken_stages(p, m.id, form);
                if (!st) continue;
                CAPTURE(f);
                CAPTURE(m.id);
                CAPTURE(form);
                const auto r = attn::check::check_problem(p, *st);
                if (m.id == "unstable-softmax" && f != "correct-large") {
                    CHECK(r.first_divergence.empty());
                    continue;
                }
                const bool twin = f == "correct-gqa" && (m.id == "scale-by-dk" || m.id == "scale-by-dmodel");
                REQUIRE(r.diagnosis.size() == (twin ? 2u : 1u));
                CHECK((r.diagnosis[0].id == m.id || (twin && r.diagnosis[1].id == m.id)));
            }
    }
}
