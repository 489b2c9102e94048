// Tests of the scorecard (lessons/scorecard.hpp, `attn claims`): the registry holds
// the 44 claims with their place in the source, the verdict rule's order, flags that
// do not decide a verdict, and the command's output (one claim, JSON, Chinese, errors).
// The whole table at several seeds is compared in tests/test_lessons.cpp, on the runs
// that test already makes.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lesson.hpp"
#include "scorecard.hpp"
#include "test_util.hpp"

namespace {

using attn::lessons::ClaimEvidence;
using attn::lessons::ClaimVerdict;
using attn::lessons::verdict_of;

std::string attn_cmd(const std::string& args) {
    return std::string("ATTN_CACHE_DIR= '") + ATTN_BINARY + "' " + args;
}

ClaimEvidence ev(const char* kind) { return {kind, "text", 1, "attn lesson 1"}; }

}  // namespace

TEST_CASE("claims registry: C1..C44 in order, each in our words with its article and section") {
    const auto& reg = attn::lessons::claim_registry();
    REQUIRE(reg.size() == 44);
    for (size_t i = 0; i < reg.size(); ++i) {
        CAPTURE(reg[i].id);
        CHECK(reg[i].id == "C" + std::to_string(i + 1));
        CHECK(reg[i].says.size() > 20);
        CHECK(reg[i].says.find('"') == std::string::npos);  // a rendering, not a quotation
        REQUIRE_FALSE(reg[i].where.empty());
        for (const auto& [article, section] : reg[i].where) {
            CHECK((article == 1 || article == 2));
            CHECK_FALSE(section.empty());
        }
        CHECK(attn::lessons::claim_text(reg[i].id) == reg[i].says);  // --quote prints the same words
    }
    CHECK(attn::lessons::find_claim("c18") == &reg[17]);
    CHECK(attn::lessons::find_claim("C45") == nullptr);
    CHECK(attn::lessons::claim_where(reg[17], attn::lessons::Lang::en) == "article 2, §3.1");
    // every claim a lesson lists is in the registry
    for (const auto& l : attn::lessons::all_lessons())
        for (const auto& c : l.claims) CHECK(attn::lessons::find_claim(c) != nullptr);
}

TEST_CASE("verdict rule: error, not supported, failed/inconclusive, qualified, imprecise, supported, not measured") {
    CHECK(verdict_of({}) == ClaimVerdict::not_measured);
    CHECK(verdict_of({ev("not measured")}) == ClaimVerdict::not_measured);
    CHECK(verdict_of({ev("identity"), ev("not measured")}) == ClaimVerdict::supported);
    CHECK(verdict_of({ev("measured"), ev("qualified")}) == ClaimVerdict::qualified);
    CHECK(verdict_of({ev("qualified"), ev("inconclusive")}) == ClaimVerdict::inconclusive);
    CHECK(verdict_of({ev("inconclusive"), ev("not supported")}) == ClaimVerdict::not_supported);
    CHECK(verdict_of({ev("not supported"), ev("error of the source")}) == ClaimVerdict::source_error);
    // the source's loose words: imprecise, below a qualification, above a check that held
    CHECK(verdict_of({ev("source imprecise"), ev("identity")}) == ClaimVerdict::imprecise);
    CHECK(verdict_of({ev("source imprecise"), ev("qualified")}) == ClaimVerdict::qualified);
    CHECK(verdict_of({ev("source imprecise")}) == ClaimVerdict::imprecise);
    // a slip beside a sound claim decides nothing
    CHECK(verdict_of({ev("source slip"), ev("identity")}) == ClaimVerdict::supported);
    int d = -2;
    CHECK(verdict_of({ev("identity"), ev("measured")}, &d) == ClaimVerdict::supported);
    CHECK(d == 1);  // a measurement is the better reason than an identity
}

TEST_CASE("verdict rule: a failed check never leaves a claim supported") {
    // a measured check that failed, alone or beside checks that held, measured or identities
    for (const auto& evidence : std::vector<std::vector<attn::lessons::ClaimEvidence>>{
             {ev("failed")},
             {ev("measured"), ev("failed")},
             {ev("failed"), ev("identity"), ev("measured")},
             {ev("source imprecise"), ev("failed"), ev("measured")}}) {
        int d = -2;
        const ClaimVerdict v = verdict_of(evidence, &d);
        CAPTURE(evidence.size());
        CHECK(v != ClaimVerdict::supported);
        CHECK(v == ClaimVerdict::inconclusive);
        REQUIRE(d >= 0);
        CHECK(evidence[static_cast<size_t>(d)].kind == "failed");  // the failure is the reason given
    }
    // ...and it does not soften a verdict that is harsher
    CHECK(verdict_of({ev("failed"), ev("not supported")}) == ClaimVerdict::not_supported);
    // the deciding evidence's keys, listed by the scorecard
    const nlohmann::json rec = {{"number", 16},
                                {"checks",
                                 {{{"claim", "C13"}, {"ok", true}, {"kind", "identity"}, {"text", "a"}},
                                  {{"claim", "C13"}, {"ok", false}, {"kind", "measured"}, {"text", "b"}}}}};
    const auto all = attn::lessons::score_claims({rec}, attn::lessons::Lang::en);
    CHECK(all[12].verdict == ClaimVerdict::inconclusive);
    CHECK(all[12].decided_by == std::vector<std::string>{"L16/failed/1"});
    CHECK(all[12].evidence[0].key == "L16/identity/1");
}

TEST_CASE("score_claims reads the lessons' records: one entry per claim, partial tours list only what they test") {
    const nlohmann::json rec = {
        {"number", 3},
        {"checks", {{{"claim", "C11,C12"}, {"ok", true}, {"kind", "identity"}, {"text", "a"}},
                    {{"claim", ""}, {"ok", true}, {"kind", "measured"}, {"text", "beyond the source"}}}},
        {"qualified", {{{"claim", "C12"}, {"text", "b 0.5"}, {"command", "attn experiment x"}}}},
        {"inconclusive", nlohmann::json::array()},
        {"not_supported", nlohmann::json::array()},
        {"unmeasured", {{{"claim", "C41"}, {"text", "gpu"}}}},
        {"source_errors", {{{"claim", "C11"}, {"quote", "q"}, {"text", "t"}, {"severity", "slip"}}}}};
    const auto all = attn::lessons::score_claims({rec}, attn::lessons::Lang::en);
    REQUIRE(all.size() == 44);
    CHECK(all[10].verdict == ClaimVerdict::supported);  // C11: the slip does not decide
    CHECK(all[10].evidence.size() == 2);
    CHECK(all[11].verdict == ClaimVerdict::qualified);  // C12
    CHECK(all[11].command == "attn experiment x");
    CHECK(all[11].reason == "b 0.5");
    CHECK(all[40].verdict == ClaimVerdict::not_measured);  // C41
    CHECK(all[0].verdict == ClaimVerdict::not_measured);   // C1: nothing recorded
    CHECK(all[0].lessons.empty());
    const auto part = attn::lessons::score_claims({rec}, attn::lessons::Lang::en, true);
    CHECK(part.size() == 3);
    const auto n = attn::lessons::verdict_counts(all);
    int total = 0;
    for (const auto& [v, k] : n) total += k;
    CHECK(total == 44);
}

TEST_CASE("CLI: attn claims ID in full, --json with format and version, --lang zh, a bad id exits 2") {
    using attn::test::run_shell;
    // no cache (ATTN_CACHE_DIR empty): each run computes, from the lessons that cite C21
    const auto one = run_shell(attn_cmd("claims C21"));
    REQUIRE(one.code == 0);
    CHECK(one.out.find("Claim C21, in our words") != std::string::npos);
    CHECK(one.out.find("article 1, §4.1") != std::string::npos);
    // the shapes hold; the example's torch.randn weights are a slip beside them, which decides nothing
    CHECK(one.out.find("Verdict: supported.") != std::string::npos);
    CHECK(one.out.find("[source slip]") != std::string::npos);
    CHECK(one.out.find("attn lesson 7") != std::string::npos);
    CHECK(one.out.find("\u201c") == std::string::npos);  // no rendering shown as a quotation
    const auto js = run_shell(attn_cmd("claims c21 --json"));
    REQUIRE(js.code == 0);
    const auto doc = nlohmann::json::parse(js.out);
    CHECK(doc["format"] == "attn-claims");
    CHECK(doc["version"] == 1);
    REQUIRE(doc["claims"].size() == 1);
    CHECK(doc["claims"][0]["id"] == "C21");
    CHECK(doc["claims"][0]["verdict"] == "supported");
    CHECK(doc["claims"][0]["source"] == "article 1, §4.1");
    CHECK_FALSE(doc["claims"][0]["evidence"].empty());
    CHECK_FALSE(doc["claims"][0]["decided_by"].empty());  // the keys of the evidence that decided it
    const auto zh = run_shell(attn_cmd("claims C21 --lang zh"));
    REQUIRE(zh.code == 0);
    CHECK(zh.out.find("文章 1，§4.1") != std::string::npos);
    CHECK(zh.out.find("获数据支持") != std::string::npos);
    const auto bad = run_shell(attn_cmd("claims C45 2>&1"));
    CHECK(bad.code == 2);
    CHECK(bad.out.find("C45") != std::string::npos);
    CHECK(std::count(bad.out.begin(), bad.out.end(), '\n') == 1);
}
