// attn/check/check.hpp: `attn check`, which reads a learner's attention intermediates,
// recomputes every stage with the reference and names the known mistake that explains
// the first stage that diverges.
//
// The pipeline (tensor names of the dump format, docs/formats.md):
//   inputs   x [B,T,D], W_q [H·Dk,D], W_k [Hkv·Dk,D], W_v [Hkv·Dv,D], W_o [Dout,H·Dv], b_* (optional)
//            or Q [B,H,T,Dk], K [B,Hkv,T,Dk], V [B,Hkv,T,Dv] directly ((H,T,Dk) and (T,Dk) too)
//   stages   Q, K, V (heads split), scores = Q·Kᵀ, scores_scaled, scores_masked, weights,
//            head_out = weights·V, merged [B,T,H·Dv], out = merged·W_oᵀ + b_o
// The reference stages come from the library's reference (linear_forward and
// attention_reference, in double). Each catalogue entry is the same pipeline with one
// known mistake; an entry is named when it reproduces the learner's tensor at the first
// divergent stage within the tolerance, never otherwise.
//
// Tolerance of a stage: |learner - reference| <= rtol · max(1, max |reference|), with
// non-finite entries (the -inf of a mask, NaN) required to agree exactly.
//   float32 answers: rtol 1e-4. The learner's float32 sums carry a relative error of a
//     few units of 2^-24 ≈ 6e-8 per term, growing with the length of the sums (a few
//     hundred terms for the sizes attn writes); 1e-4 leaves a factor of about ten above
//     that, while every catalogued mistake moves the tensor by 1e-2 or more.
//   float64 answers: rtol 1e-5. attn holds tensors as float32, so a float64 answer and
//     its inputs are each rounded once on reading (6e-8 relative); the reference runs in
//     double from the rounded inputs, and the rounding of the inputs, carried through
//     the sums, stays below 1e-6 of the largest entry for these sizes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/core/attention.hpp"
#include "attn/core/tensor.hpp"

namespace attn::check {

// A tensor in double, row-major.
struct Arr {
    Shape shape;
    std::vector<double> v;
    int64_t numel() const { return static_cast<int64_t>(v.size()); }
};
Arr to_arr(const Tensor& t);

// Which keys a query may see: causal (j <= i), key padding (j < key_len[b]), or a dense
// boolean [B, Tq, Tk] array (1 = may attend).
struct MaskSpec {
    bool causal = false;
    std::vector<int64_t> key_len;  // empty: no padding
    std::vector<uint8_t> dense;    // empty: none
    bool is_none() const { return !causal && key_len.empty() && dense.empty(); }
};
// "none", "causal", "pad:L1,L2,..." or "causal+pad:L1,...". InputError (neutral words) otherwise.
MaskSpec parse_mask_spec(const std::string& text);
std::string mask_spec_name(const MaskSpec& m);

// Where the pipeline starts.
enum class Start { x, qkv, scores };

struct Problem {
    Start start = Start::x;
    std::map<std::string, Arr> inputs;  // x, W_*, b_*  |  Q, K, V  |  scores_scaled
    int64_t heads = 1, kv_heads = 0;    // kv_heads 0: heads
    Scale scale;                        // InvSqrtDk, None or Constant
    MaskSpec mask;
    bool f64 = false;                   // every answer tensor was float64
};

// Every stage name, in pipeline order.
const std::vector<std::string>& stage_names();

struct StageResult {
    std::string name;
    std::string status;  // "pass", "fail" or "missing" (the file does not hold it)
    double max_abs_diff = 0;  // NaN when not comparable (shape or non-finite pattern differs)
    double tolerance = 0;
    Shape shape, expected_shape;  // shape empty when missing
    std::string note;             // why a failure is one (shape, NaN pattern)
};
struct Diagnosis {
    std::string id, text;
};
struct CheckReport {
    std::vector<StageResult> stages;
    std::string first_divergence;     // "" when every given stage passes
    std::vector<Diagnosis> diagnosis;  // catalogue entries that reproduce it
    std::vector<std::string> observations;  // what can be said when nothing matched
    double rtol = 0;
    bool f64 = false;
};

// One mistake of the catalogue: its id, what it is in plain words, the fix and the lesson.
struct Mistake {
    std::string id, what, fix, lesson;
};
const std::vector<Mistake>& catalogue();
const Mistake& mistake(const std::string& id);  // InputError for an unknown id
std::string diagnosis_text(const Mistake& m);

// The reference stages of a problem (those it can compute: no `out` without W_o).
std::map<std::string, Arr> reference_stages(const Problem& p);
// The stages with mistake `id` made (form 0: wherever it applies; form k > 0: variants of
// the id, e.g. the two ways of masking after the softmax). nullopt when the mistake
// cannot apply to this problem (no mask to get wrong, no bias to forget, shapes that
// would not fit).
std::optional<std::map<std::string, Arr>> mistaken_stages(const Problem& p, const std::string& id, int form);
int mistake_forms(const std::string& id);

// Checks `learner` (stage name -> tensor) against the reference. Throws InputError
// for inputs that cannot be read as a problem (NaN input, shapes that disagree).
CheckReport check_problem(const Problem& p, const std::map<std::string, Arr>& learner);

// The generic comparison: ordered stage names, reference stages, the learner's, and
// candidates (id, stages) tried at the first divergent stage.
struct Candidate {
    std::string id;
    std::map<std::string, Arr> stages;
};
CheckReport compare_stages(const std::vector<std::string>& order, const std::map<std::string, Arr>& ref,
                           const std::map<std::string, Arr>& learner, const std::vector<Candidate>& candidates,
                           bool f64);

// A learner's file (.npz, .safetensors or attn-dump .json), read into a problem and the
// learner's stages. Settings the shapes cannot tell come from `given` (heads, kv_heads,
// scale, mask: any left unset) or from the file's config. Bad input: InputError naming the
// tensor and the rule.
struct CheckSettings {
    std::optional<int64_t> heads, kv_heads;
    std::optional<Scale> scale;
    std::optional<MaskSpec> mask;
};
struct LearnerFile {
    Problem problem;
    std::map<std::string, Arr> stages;
};
LearnerFile read_learner_file(const std::string& path, const CheckSettings& given);
// The same from tensors already read (name -> tensor, which names were float64, config).
LearnerFile learner_from_tensors(const std::map<std::string, Tensor>& tensors, const std::vector<std::string>& f64,
                                 const nlohmann::json& config, const CheckSettings& given);

// The report as the stage table (text) and as the "attn-check" JSON document.
std::string report_text(const CheckReport& r);
nlohmann::ordered_json report_json(const CheckReport& r);

}  // namespace attn::check
