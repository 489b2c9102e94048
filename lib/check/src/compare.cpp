// Stage-by-stage comparison, the diagnosis and the report (attn/check/check.hpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "attn/check/check.hpp"
#include "attn/io/dump.hpp"

namespace attn::check {
namespace {

constexpr double kRtol32 = 1e-4, kRtol64 = 1e-5;

// The shape without its axes of size 1: (1, 1, T, T) and (T, T) are read alike.
Shape squeezed(const Shape& s) {
    Shape out;
    for (int64_t d : s)
        if (d != 1) out.push_back(d);
    return out;
}

double max_finite_abs(const Arr& a) {
    double m = 0;
    for (double v : a.v)
        if (std::isfinite(v)) m = std::max(m, std::fabs(v));
    return m;
}

struct Cmp {
    bool comparable = false, pass = false;
    double max_diff = std::numeric_limits<double>::quiet_NaN();
    double tol = 0;
    int64_t nan_where_finite = 0, nonfinite_mismatch = 0, differ = 0;
};

// `got` against `want`, within rtol · max(1, max |want|).
Cmp compare(const Arr& got, const Arr& want, double rtol) {
    Cmp c;
    c.tol = rtol * std::max(1.0, max_finite_abs(want));
    if (got.numel() != want.numel() || squeezed(got.shape) != squeezed(want.shape)) return c;
    c.comparable = true;
    c.max_diff = 0;
    for (size_t k = 0; k < got.v.size(); ++k) {
        const double g = got.v[k], w = want.v[k];
        if (std::isfinite(g) && std::isfinite(w)) {
            const double d = std::fabs(g - w);
            c.max_diff = std::max(c.max_diff, d);
            if (d > c.tol) ++c.differ;
        } else if (!(std::isnan(g) && std::isnan(w)) && !(std::isinf(g) && g == w)) {
            ++c.nonfinite_mismatch;
            if (std::isnan(g) && std::isfinite(w)) ++c.nan_where_finite;
        }
    }
    if (c.nonfinite_mismatch > 0) c.max_diff = std::numeric_limits<double>::infinity();
    c.pass = c.nonfinite_mismatch == 0 && c.max_diff <= c.tol;
    return c;
}

// What can be said about a divergent stage without naming a mistake.
std::vector<std::string> observe(const std::string& name, const Arr& got, const Arr& want, const Cmp& c) {
    std::vector<std::string> out;
    if (!c.comparable) {
        out.push_back(
            fmt::format("{} has shape {}, the reference {}", name, shape_str(got.shape), shape_str(want.shape)));
        return out;
    }
    if (c.nan_where_finite > 0)
        out.push_back(fmt::format("{} holds NaN in {} places where the reference is finite", name, c.nan_where_finite));
    else if (c.nonfinite_mismatch > 0)
        out.push_back(fmt::format("{} is infinite or NaN in {} places where the reference is not (or the other way)",
                                  name, c.nonfinite_mismatch));
    // a constant factor: got = f · want on the finite entries
    double gw = 0, ww = 0;
    bool all_finite = true;
    for (size_t k = 0; k < got.v.size(); ++k) {
        if (!std::isfinite(got.v[k]) || !std::isfinite(want.v[k])) {
            all_finite = all_finite && std::isinf(want.v[k]) && got.v[k] == want.v[k];
            continue;
        }
        gw += got.v[k] * want.v[k];
        ww += want.v[k] * want.v[k];
    }
    if (all_finite && ww > 0) {
        const double f = gw / ww;
        double worst = 0;
        for (size_t k = 0; k < got.v.size(); ++k)
            if (std::isfinite(want.v[k])) worst = std::max(worst, std::fabs(got.v[k] - f * want.v[k]));
        if (worst <= c.tol * std::max(1.0, std::fabs(f)) && std::fabs(f - 1) > 1e-3)
            out.push_back(fmt::format("{} is the reference times a constant factor {:.6g} (1/{:.6g})", name, f, 1 / f));
    }
    // a transposed matrix: each trailing square block is the reference's transpose
    const Shape s = want.shape;
    if (s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2] && s.back() > 1) {
        const int64_t n = s.back(), blocks = want.numel() / (n * n);
        Arr t = want;
        for (int64_t b = 0; b < blocks; ++b)
            for (int64_t i = 0; i < n; ++i)
                for (int64_t j = 0; j < n; ++j)
                    t.v[static_cast<size_t>(b * n * n + i * n + j)] =
                        want.v[static_cast<size_t>(b * n * n + j * n + i)];
        if (compare(got, t, c.tol / std::max(1.0, max_finite_abs(want))).pass)
            out.push_back(fmt::format("{} is the reference with each (T, T) matrix transposed", name));
    }
    if (name == "weights") {
        const int64_t n = want.shape.back(), rows = want.numel() / n;
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (int64_t r = 0; r < rows; ++r) {
            double sum = 0;
            for (int64_t j = 0; j < n; ++j) sum += got.v[static_cast<size_t>(r * n + j)];
            lo = std::min(lo, sum);
            hi = std::max(hi, sum);
        }
        if (!(std::fabs(lo - 1) <= c.tol && std::fabs(hi - 1) <= c.tol))
            out.push_back(
                fmt::format("the rows of weights do not all sum to 1 (row sums from {:.6g} to {:.6g})", lo, hi));
    }
    if (c.differ > 0)
        out.push_back(fmt::format("{} of {} entries of {} differ from the reference by more than the tolerance",
                                  c.differ, got.numel(), name));
    return out;
}

}  // namespace

const std::vector<std::string>& stage_names() {
    static const std::vector<std::string> names = {"Q",       "K",        "V",      "scores", "scores_scaled",
                                                   "scores_masked", "weights", "head_out", "merged", "out"};
    return names;
}

CheckReport compare_stages(const std::vector<std::string>& order, const std::map<std::string, Arr>& ref,
                           const std::map<std::string, Arr>& learner, const std::vector<Candidate>& candidates,
                           bool f64) {
    CheckReport r;
    r.f64 = f64;
    r.rtol = f64 ? kRtol64 : kRtol32;
    for (const std::string& name : order) {
        auto want = ref.find(name);
        if (want == ref.end()) continue;
        StageResult s;
        s.name = name;
        s.expected_shape = want->second.shape;
        auto got = learner.find(name);
        if (got == learner.end()) {
            s.status = "missing";
            s.max_abs_diff = std::numeric_limits<double>::quiet_NaN();
            s.tolerance = r.rtol * std::max(1.0, max_finite_abs(want->second));
            r.stages.push_back(s);
            continue;
        }
        const Cmp c = compare(got->second, want->second, r.rtol);
        s.shape = got->second.shape;
        s.max_abs_diff = c.max_diff;
        s.tolerance = c.tol;
        s.status = c.pass ? "pass" : "fail";
        if (!c.comparable) s.note = "shape differs";
        else if (c.nonfinite_mismatch > 0) s.note = "NaN or inf where the reference differs";
        r.stages.push_back(s);
        if (!c.pass && r.first_divergence.empty()) {
            r.first_divergence = name;
        }
    }
    if (r.first_divergence.empty()) return r;
    // A candidate is named when it reproduces the first divergent stage, differs there from the
    // reference, and reproduces every later stage the learner gave as well.
    const std::string& first = r.first_divergence;
    auto from = std::find(order.begin(), order.end(), first);
    std::set<std::string> named;
    for (const Candidate& cand : candidates) {
        if (named.count(cand.id) != 0) continue;
        auto at = cand.stages.find(first);
        if (at == cand.stages.end() || compare(at->second, ref.at(first), r.rtol).pass) continue;
        bool all = true;
        for (auto it = from; all && it != order.end(); ++it) {
            auto got = learner.find(*it);
            if (got == learner.end() || ref.count(*it) == 0) continue;
            auto c = cand.stages.find(*it);
            all = c != cand.stages.end() && compare(got->second, c->second, r.rtol).pass;
        }
        if (!all) continue;
        named.insert(cand.id);
        r.diagnosis.push_back({cand.id, ""});
    }
    if (r.diagnosis.empty()) {
        const Arr &got = learner.at(first), &want = ref.at(first);
        r.observations = observe(first, got, want, compare(got, want, r.rtol));
    }
    return r;
}

CheckReport check_problem(const Problem& p, const std::map<std::string, Arr>& learner) {
    std::map<std::string, Arr> ref = reference_stages(p);
    if (p.start != Start::x)
        for (const char* n : {"Q", "K", "V"}) ref.erase(n);  // inputs, not stages
    CheckReport r = compare_stages(stage_names(), ref, learner, {}, p.f64);
    if (r.first_divergence.empty()) return r;
    // Only now the catalogue: each form of each mistake is one more run of the pipeline.
    std::vector<Candidate> cands;
    for (const Mistake& m : catalogue())
        for (int f = 0; f < mistake_forms(m.id); ++f)
            if (auto st = mistaken_stages(p, m.id, f)) cands.push_back({m.id, std::move(*st)});
    r = compare_stages(stage_names(), ref, learner, cands, p.f64);
    for (Diagnosis& d : r.diagnosis) d.text = diagnosis_text(mistake(d.id));
    return r;
}

std::string report_text(const CheckReport& r) {
    std::string out = fmt::format("{:<14} {:<16} {:<16} {:>11} {:>10}  {}\n", "stage", "your shape", "expected",
                                  "max |diff|", "tolerance", "status");
    for (const StageResult& s : r.stages) {
        const std::string diff = std::isnan(s.max_abs_diff) ? "-" : fmt::format("{:.2e}", s.max_abs_diff);
        out += fmt::format("{:<14} {:<16} {:<16} {:>11} {:>10.1e}  {}{}\n", s.name,
                           s.shape.empty() ? "-" : shape_str(s.shape), shape_str(s.expected_shape), diff, s.tolerance,
                           s.status, s.note.empty() ? "" : " (" + s.note + ")");
    }
    out += fmt::format("tolerance: {:g} x max(1, max |reference|) of each stage ({} answer)\n", r.rtol,
                       r.f64 ? "float64" : "float32");
    if (r.first_divergence.empty()) {
        out += "every stage you gave matches the reference\n";
        return out;
    }
    out += fmt::format("first divergent stage: {}\n", r.first_divergence);
    for (const Diagnosis& d : r.diagnosis) out += fmt::format("diagnosis [{}]: {}\n", d.id, d.text);
    if (r.diagnosis.empty()) {
        out += "no known mistake of the catalogue reproduces it; what can be said:\n";
        for (const std::string& o : r.observations) out += "  - " + o + "\n";
    }
    return out;
}

nlohmann::ordered_json report_json(const CheckReport& r) {
    using J = nlohmann::ordered_json;
    J stages = J::array();
    for (const StageResult& s : r.stages) {
        J st;
        st["name"] = s.name;
        st["status"] = s.status;
        st["max_abs_diff"] = std::isnan(s.max_abs_diff) ? J(nullptr) : J(s.max_abs_diff);
        st["shape"] = s.shape.empty() ? J(nullptr) : J(s.shape);
        st["expected_shape"] = s.expected_shape;
        stages.push_back(st);
    }
    J diag = J::array();
    for (const Diagnosis& d : r.diagnosis) diag.push_back({{"id", d.id}, {"text", d.text}});
    J j;
    j["format"] = "attn-check";
    j["version"] = 1;
    j["stages"] = stages;
    j["first_divergence"] = r.first_divergence.empty() ? J(nullptr) : J(r.first_divergence);
    j["diagnosis"] = diag;
    return j;
}

}  // namespace attn::check
