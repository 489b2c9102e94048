// libFuzzer target: attn::evidence_from_json (and experiment_from_json within it), the
// reader of the stored runs in data/evidence/ that the tour cites. Input: any bytes, read as
// the tour reads them (attn::parse_json: JSON nested deeper than kMaxJsonDepth refused). It
// must return evidence that keeps the documented
// invariants (one run per seed, each of the experiment and with its seed; every readable
// verdict's template taking exactly its arguments; evidence rows one cell per column) or
// throw attn::InputError, nothing else.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/io/guards.hpp"
#include "attn/experiments/experiment.hpp"
#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using attn::fuzz::fail;
    try {
        const nlohmann::json j = attn::parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        const attn::StoredEvidence e = attn::evidence_from_json(j);
        if (e.seeds.empty() || e.runs.size() != e.seeds.size()) fail("runs and seeds differ in number");
        for (const attn::ExperimentResult& r : e.runs) {
            if (r.name != e.experiment) fail("a run of another experiment");
            for (const attn::Verdict& v : r.verdicts) {
                size_t holes = 0;
                for (size_t p = v.plain.find("{}"); p != std::string::npos; p = v.plain.find("{}", p + 2)) ++holes;
                if (!v.task.empty() && holes != v.plain_args.size()) fail("a template without its arguments");
                for (const auto& row : v.evidence.rows)
                    if (row.size() != v.evidence.columns.size()) fail("an evidence row of the wrong width");
            }
            for (const attn::ExperimentTable& t : r.tables)
                for (const auto& row : t.rows)
                    if (row.size() != t.columns.size()) fail("a table row of the wrong width");
        }
        (void)attn::evidence_json(e);  // what was read writes back
    } catch (const attn::InputError&) {
    }
    return 0;
}
