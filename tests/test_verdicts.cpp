// The verdicts agree wherever they are printed: the tour (its lessons' records), `attn claims`
// (cold, then from its cache; it reads the stored quick runs, which must equal the tour's live ones),
// docs/claims.md's table, and `attn experiment NAME` at the size the tour trains (quick, seeds 0-2)
// on every claim it judges. And the tour is right at other seeds: 0 ✗ and the same
// verdicts at three seeds beyond the 0, 1, 7 of tests/test_lessons.cpp, on the lessons whose
// checks read random numbers (the others print the same at every seed).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/experiments/experiment.hpp"
#include "attn/io/dump.hpp"
#include "scorecard.hpp"
#include "test_util.hpp"
#include "whole_tour.hpp"

namespace {

using attn::lessons::ClaimVerdict;

// The order of the verdict rule (docs/claims.md): a lower number is the harsher verdict.
int severity(const std::string& v) {
    static const std::map<std::string, int> r{{"error of the source", 0}, {"not supported", 1}, {"inconclusive", 2},
                                              {"qualified", 3},           {"imprecise", 4},     {"supported", 5},
                                              {"not measured", 6}};
    const auto it = r.find(v);
    REQUIRE(it != r.end());
    return it->second;
}

// The tour's verdict on every claim at `seed` (the lessons' JSON records, kept for the process).
std::map<std::string, std::string> tour_verdicts(uint64_t seed, std::vector<nlohmann::json>* records = nullptr) {
    std::vector<nlohmann::json> recs;
    for (const auto& l : attn::lessons::all_lessons())
        recs.push_back(attn::test::lesson_run(l, seed, attn::lessons::Lang::en, /*json=*/true).result.record);
    std::map<std::string, std::string> out;
    for (const auto& s : attn::lessons::score_claims(recs, attn::lessons::Lang::en))
        out[s.claim->id] = attn::lessons::claim_verdict_name(s.verdict);
    if (records) *records = std::move(recs);
    return out;
}

// docs/claims.md's table of verdicts: "| C18 | qualified | ... |" rows under "## The verdicts".
std::map<std::string, std::string> doc_verdicts() {
    const std::string doc = attn::read_file(std::string(ATTN_SOURCE_DIR) + "/docs/claims.md");
    const size_t at = doc.find("\n## The verdicts");
    REQUIRE(at != std::string::npos);
    std::map<std::string, std::string> out;
    const std::regex row(R"(\n\| (C\d+) \| ([a-z ]+?) \|)");
    for (std::sregex_iterator it(doc.begin() + static_cast<std::ptrdiff_t>(at), doc.end(), row), end; it != end; ++it)
        out[(*it)[1].str()] = (*it)[2].str();
    return out;
}

// The training verdicts the tour's records cite, by the command each names ("attn experiment NAME",
// "attn experiment heads --full"): the experiments read at their quick size, and the (claim,
// experiment) pairs read from a stored run of another size.
struct TrainingCitations {
    std::set<std::string> quick;
    std::set<std::pair<std::string, std::string>> stored;
};
TrainingCitations training_citations(const std::vector<nlohmann::json>& records) {
    const std::string prefix = "attn experiment ";
    TrainingCitations out;
    for (const auto& rec : records)
        for (const char* kind : {"checks", "qualified", "not_supported", "inconclusive"})
            if (rec.contains(kind))
                for (const auto& v : rec[kind]) {
                    if (!v.contains("command")) continue;
                    const std::string c = v["command"].get<std::string>();
                    REQUIRE(c.rfind(prefix, 0) == 0);
                    const std::string name = c.substr(prefix.size(), c.find(' ', prefix.size()) - prefix.size());
                    if (v.contains("stored")) out.stored.insert({v["claim"].get<std::string>(), name});
                    else out.quick.insert(name);
                }
    return out;
}

}  // namespace

TEST_CASE("docs/claims.md, attn claims (cold and cached), attn experiment NAME and the tour agree on every verdict" *
          ATTN_WHOLE_TOUR) {
    std::vector<nlohmann::json> records;
    const auto tour = tour_verdicts(0, &records);
    REQUIRE(tour.size() == attn::lessons::claim_registry().size());

    // docs/claims.md, whose table is the tour's without the MiniLM model: where the model is
    // installed, lesson 15 measures C32 and C34 as well, and those two rows are not compared
    std::set<std::string> model_claims;
    for (const auto& rec : records)
        if (rec["lesson"] == "real-heads" && rec["unmeasured"].empty()) model_claims = {"C32", "C34"};
    const auto docs = doc_verdicts();
    CHECK(docs.size() == tour.size());
    for (const auto& [id, v] : tour) {
        CAPTURE(id);
        CHECK(docs.count(id) == 1);
        if (docs.count(id) == 1 && model_claims.count(id) == 0) CHECK(docs.at(id) == v);
    }

    // attn claims --json, computed (an empty cache directory), then read back from its cache
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "attn-test-claims-cache";
    std::filesystem::remove_all(dir);
    const std::string cmd = "ATTN_CACHE_DIR='" + dir.string() + "' '" + ATTN_BINARY + "' claims --json";
    const auto cold = attn::test::run_shell(cmd);
    REQUIRE(cold.code == 0);
    const auto warm = attn::test::run_shell(cmd);
    REQUIRE(warm.code == 0);
    CHECK(warm.out == cold.out);
    std::filesystem::remove_all(dir);
    const auto doc = nlohmann::json::parse(cold.out);
    REQUIRE(doc["claims"].size() == tour.size());
    for (const auto& c : doc["claims"]) {
        const std::string id = c["id"].get<std::string>();
        CAPTURE(id);
        CHECK(c["verdict"].get<std::string>() == tour.at(id));
        // every claim names the evidence that decided it (none for a claim no lesson tests)
        if (c["verdict"] != "not measured" || !c["evidence"].empty()) CHECK_FALSE(c["decided_by"].empty());
        std::set<std::string> keys;
        for (const auto& e : c["evidence"]) keys.insert(e["key"].get<std::string>());
        for (const auto& k : c["decided_by"]) CHECK(keys.count(k.get<std::string>()) == 1);
    }

    CHECK(doc["training_runs"] == "stored");

    // The stored quick runs `attn claims` reads (data/evidence/NAME-quick.json) are the runs the tour
    // trains: the same experiment, size and seeds, and on every seed the same verdict on every claim as
    // the run trained here (the tour above trained them; evidence_run keeps them for the process).
    int stored_files = 0;
    for (const auto& e : attn::experiments()) {
        const auto* ev = attn::lessons::stored_evidence(attn::lessons::quick_evidence_file(e.name));
        if (ev == nullptr) continue;
        ++stored_files;
        CAPTURE(e.name);
        CHECK(ev->experiment == e.name);
        CHECK(ev->size == attn::ExperimentSize::Quick);
        REQUIRE(ev->seeds == attn::lessons::evidence_seeds());
        for (size_t i = 0; i < ev->seeds.size(); ++i) {
            CAPTURE(ev->seeds[i]);
            const auto& live = attn::lessons::evidence_run(e, ev->seeds[i]).verdicts;
            const auto& stored = ev->runs[i].verdicts;
            REQUIRE(live.size() == stored.size());
            for (size_t k = 0; k < live.size(); ++k) {
                CAPTURE(live[k].claim);
                CHECK(stored[k].claim == live[k].claim);
                CHECK(attn::verdict_name(stored[k].kind) == std::string(attn::verdict_name(live[k].kind)));
            }
        }
    }
    // every training experiment the tour cites at its quick size has its stored runs
    const TrainingCitations cited = training_citations(records);
    for (const std::string& name : cited.quick) {
        CAPTURE(name);
        CHECK(attn::lessons::stored_evidence(attn::lessons::quick_evidence_file(name)) != nullptr);
    }
    CHECK(stored_files >= static_cast<int>(cited.quick.size()));

    // attn experiment NAME at the tour's size and seeds, on every claim it judges: its verdict is never
    // harsher than the tour's (seeds that disagree count as inconclusive), so an experiment that measures
    // a claim counts toward its verdict. Where the tour reads a claim from a stored run of a larger size
    // (C33: data/evidence/heads-full.json), that run is the evidence, compared with a fresh training by
    // tests/test_stored_evidence.cpp, and the quick size is not. The experiments that measure random inputs
    // and timings (variance, variants, memory) are not training verdicts and are left out.
    for (const auto& e : attn::experiments()) {
        if (e.name == "variance" || e.name == "variants" || e.name == "memory") continue;
        std::map<std::pair<std::string, size_t>, std::vector<std::string>> kinds;  // (claim, rank) -> per seed
        for (uint64_t seed : attn::lessons::evidence_seeds()) {
            std::map<std::string, size_t> n;
            for (const auto& v : attn::lessons::evidence_run(e, seed).verdicts)
                kinds[{v.claim, n[v.claim]++}].push_back(attn::verdict_name(v.kind));
        }
        for (const auto& [what, per_seed] : kinds) {
            std::string v = per_seed.front();
            for (const auto& k : per_seed)
                if (k != v || per_seed.size() != attn::lessons::evidence_seeds().size()) v = "inconclusive";
            CAPTURE(e.name);
            CAPTURE(what.first);
            CAPTURE(what.second);
            CAPTURE(v);
            REQUIRE(tour.count(what.first) == 1);
            if (cited.stored.count({what.first, e.name}) != 0) continue;
            CAPTURE(tour.at(what.first));
            CHECK(severity(tour.at(what.first)) <= severity(v));
        }
    }
}

TEST_CASE("the tour at seeds 3, 4 and 9: no check fails and every claim keeps its verdict" * ATTN_WHOLE_TOUR) {
    // Seeds 3 and 4 are the ones a reader found failing or with words that did not follow their
    // numbers. The training verdicts do not depend on --seed (their evidence seeds are fixed) and
    // are cached for the process, so this costs the lessons' own numbers only.
    const auto base = tour_verdicts(0);
    for (uint64_t seed : {3, 4, 9}) {
        CAPTURE(seed);
        std::vector<nlohmann::json> records;
        const auto other = tour_verdicts(seed, &records);
        for (const auto& rec : records) {
            CAPTURE(rec["number"].get<int>());
            CHECK(rec["failed"] == 0);
            for (const auto& c : rec["checks"])
                if (!c["ok"].get<bool>()) CHECK(c["text"].get<std::string>() == "");  // names the failing check
        }
        for (const auto& [id, v] : base) {
            CAPTURE(id);
            CHECK(other.at(id) == v);
        }
    }
}

TEST_CASE("each lesson's record cites only the claims its header lists (so `attn claims ID` runs the right lessons)" *
          ATTN_WHOLE_TOUR) {
    for (const auto& l : attn::lessons::all_lessons()) {
        const auto& rec = attn::test::lesson_run(l, 0, attn::lessons::Lang::en, /*json=*/true).result.record;
        const std::set<std::string> listed(l.claims.begin(), l.claims.end());
        for (const char* key : {"checks", "qualified", "not_supported", "inconclusive", "unmeasured", "source_errors"})
            for (const auto& item : rec[key]) {
                const std::string ids = item.value("claim", "");
                size_t i = 0;
                while (i < ids.size()) {
                    const size_t j = std::min(ids.find(',', i), ids.size());
                    const std::string id = ids.substr(i, j - i);
                    CAPTURE(l.slug);
                    CAPTURE(id);
                    if (!id.empty()) CHECK(listed.count(id) == 1);
                    i = j + 1;
                }
            }
    }
}
