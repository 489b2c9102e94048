// The lines of a verdict on a claim: checks (✓ ≡ ✗), qualified, not supported, inconclusive, not measured,
// and errors of the source, each counted and recorded.
#include <string>

#include <fmt/format.h>

#include "claims.hpp"
#include "context_internal.hpp"
#include "lesson.hpp"
#include "text_wrap.hpp"

namespace attn::lessons {

namespace {
// A verdict's label and its text: a space between them, none after a label that
// ends in a full-width colon (Chinese punctuation carries its own space).
std::string labelled(std::string_view label, std::string_view text) {
    std::string_view plain = label;
    while (plain.size() >= 4 && plain.substr(plain.size() - 4) == "\x1b[0m") plain.remove_suffix(4);
    const bool wide_end = plain.size() >= 3 && plain.substr(plain.size() - 3) == "\uff1a";
    return fmt::format("{}{}{}", label, wide_end ? "" : " ", text);
}
}  // namespace

const char* check_kind_name(CheckKind kind) { return kind == CheckKind::identity ? "identity" : "measured"; }

bool LessonContext::check(bool ok, std::string_view claim, std::string_view text) {
    return check(ok, claim, text, CheckKind::measured);
}

bool LessonContext::identity(bool ok, std::string_view claim, std::string_view text) {
    return check(ok, claim, text, CheckKind::identity);
}

void LessonContext::quote_claims(std::string_view claims) {
    if (!opt_.quote || opt_.json) return;
    size_t i = 0;
    while (i < claims.size()) {
        const size_t j = std::min(claims.find(',', i), claims.size());
        const std::string id(claims.substr(i, j - i));
        i = j + 1;
        const std::string_view said = claim_text(id);
        if (said.empty() || !quoted_.insert(id).second) continue;
        line_item();
        print(paint(wrap_hanging(f("{} in our words: {}", id, tr(said)), opt_.width, "  ", "      "), kDim));
    }
}

bool LessonContext::check(bool ok, std::string_view claim, std::string_view text_en, CheckKind kind) {
    quote_claims(claim);
    (ok ? passed_ : failed_)++;
    if (ok) (kind == CheckKind::identity ? identities_ : measured_)++;
    const std::string said = text(text_en);
    record_["checks"].push_back({{"claim", claim}, {"ok", ok}, {"kind", check_kind_name(kind)}, {"text", said}});
    line_item();
    // ✓ a measured result, ≡ an identity shown, ✗ either one failing
    const std::string mark = !ok ? paint("\u2717", kRed)
                                 : kind == CheckKind::identity ? paint("\u2261", kCyan) : paint("\u2713", kGreen);
    // wrapped on the plain text; the mark and the claim id are painted after
    // a check with no claim id shows something beyond the source's claims (the tour's own extensions)
    if (claim.empty()) {
        print(fmt::format("  {} {}", mark, wrap_hanging(said, opt_.width, "", "    ")));
        return ok;
    }
    std::string body = wrap_hanging(fmt::format("{} {}", claim, said), opt_.width, "", "      ");
    body = body.substr(claim.size());
    print(fmt::format("  {} {}{}", mark, paint(claim, kBold), body));
    return ok;
}

// A verdict printed as its own yellow paragraph ("claim C10 qualified: ..."): counted, recorded
// under `key` with its text, the label (already translated) before the text.
void LessonContext::verdict_paragraph(int& count, const char* key, std::string_view claim, const std::string& label,
                                      std::string_view text_en) {
    quote_claims(claim);
    ++count;
    after_block_ = true;
    const std::string said = text(text_en);
    record_[key].push_back({{"claim", claim}, {"text", said}});
    print(fmt::format("\n{}", wrap(labelled(paint(label, kYellow), said), opt_.width, "  ")));
}

void LessonContext::not_supported(std::string_view claim, std::string_view text_en) {
    verdict_paragraph(unsupported_, "not_supported", claim, f("claim {} not supported:", claim), text_en);
}

void LessonContext::qualified(std::string_view claim, std::string_view text_en) {
    verdict_paragraph(qualified_, "qualified", claim, f("claim {} qualified:", claim), text_en);
}

// The record array a verdict of this kind goes to.
const char* record_key(VerdictKind k) {
    switch (k) {
        case VerdictKind::Supported: return "checks";
        case VerdictKind::Qualified: return "qualified";
        case VerdictKind::Inconclusive: return "inconclusive";
        case VerdictKind::NotSupported: break;
    }
    return "not_supported";
}

void LessonContext::verdict_line(VerdictKind kind, std::string_view claim, const std::string& said,
                                 std::string_view command) {
    if (kind == VerdictKind::Supported)
        check(true, claim, said);
    else if (kind == VerdictKind::Qualified)
        qualified(claim, said);
    else if (kind == VerdictKind::Inconclusive)  // the measurement cannot tell: never evidence against
        inconclusive(claim, said);
    else
        not_supported(claim, said);
    record_[record_key(kind)].back()["command"] = std::string(command);
}

void LessonContext::inconclusive(std::string_view claim, std::string_view text_en) {
    verdict_paragraph(inconclusive_, "inconclusive", claim, f("claim {} inconclusive:", claim), text_en);
}

void LessonContext::unmeasured(std::string_view claim, std::string_view text_en) {
    quote_claims(claim);
    ++unmeasured_;
    const std::string said = text(text_en);
    record_["unmeasured"].push_back({{"claim", claim}, {"text", said}});
    line_item();
    print(wrap(labelled(paint(f("\u25cb {} not measured here:", claim), kDim), said), opt_.width, "  "));
}

void LessonContext::source_error(std::string_view claim, std::string_view quote_en, std::string_view text_en,
                                 SourceFlag flag) {
    if (flag == SourceFlag::error) ++source_errors_;
    after_block_ = true;
    const std::string quote = text(quote_en), said = text(text_en);
    const char* severity = flag == SourceFlag::error ? "error" : flag == SourceFlag::slip ? "slip" : "imprecise";
    std::string where;
    if (const ClaimInfo* c = find_claim(claim.substr(0, claim.find(',')))) where = claim_where(*c, opt_.lang);
    record_["source_errors"].push_back(
        {{"claim", claim}, {"quote", quote}, {"text", said}, {"severity", severity}, {"where", where}});
    const std::string label = flag == SourceFlag::error ? f("! error in the source ({}, {}):", claim, where)
                              : flag == SourceFlag::slip ? f("! slip in the source ({}, {}):", claim, where)
                                                         : f("! imprecise in the source ({}, {}):", claim, where);
    // the claim in our words, then what is wrong: no quotation marks (it is not the article's sentence)
    print(fmt::format("\n{}", wrap(labelled(paint(label, kMagenta),
                                            f("{} (in our words) {}", quote, said)),
                                    opt_.width, "  ")));
}

}  // namespace attn::lessons
