// lessons/claims.hpp: the 44 claims of the source articles, in our words, and where the source says each
// (the registry the lessons cite, the scorecard judges and `attn claims` prints).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catalogue.hpp"

namespace attn::lessons {

// One claim of the source: its id, our one-line rendering (in our own words: never
// printed as a quotation) and where the source says it (article 1 or 2, section).
struct ClaimInfo {
    std::string id;                                  // "C18"
    std::string says;                                // English; translated like any text
    std::vector<std::pair<int, std::string>> where;  // {{2, "3.1"}}: article 2, §3.1
};
// C1..C44, in order.
const std::vector<ClaimInfo>& claim_registry();
const ClaimInfo* find_claim(std::string_view id);  // "C18" or "c18"; nullptr if none
// "article 2, §3.1; article 1, §6.1" in `lang`.
std::string claim_where(const ClaimInfo& c, Lang lang);

}  // namespace attn::lessons
