// claim_text (lesson.hpp): our one-line rendering of a claim, from the claim
// registry (scorecard.cpp), for --quote.
#include "lesson.hpp"
#include "scorecard.hpp"

namespace attn::lessons {

std::string_view claim_text(std::string_view id) {
    if (id.empty() || id[0] != 'C') return {};
    const ClaimInfo* c = find_claim(id);
    return c == nullptr ? std::string_view{} : std::string_view(c->says);
}

}  // namespace attn::lessons
