// app/serve_exercise.cpp: the /exercise page's computations (see serve_exercise.hpp).
#include "serve_exercise.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "attn/check/exercise.hpp"
#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/viz/html.hpp"
#include "exercise_answer.hpp"
#include "serve_lab.hpp"

namespace attn::cli {
namespace {

using nlohmann::json;

const check::ExerciseInfo& exercise_of(const json& r) {
    if (!r.contains("exercise")) return check::exercises().front();
    const json& v = r["exercise"];
    std::string key;
    if (v.is_number_unsigned()) key = std::to_string(v.get<uint64_t>());
    else if (v.is_string() && v.get<std::string>().size() <= 64) key = v.get<std::string>();
    else throw LabError("exercise", fmt::format("exercise: must be a number or a name, got {}", shown(v)));
    try {
        return check::find_exercise(key);
    } catch (const InputError& e) {
        throw LabError("exercise", printable(std::string("exercise: ") + e.what()));
    }
}

// Seeds are integers a JavaScript number holds exactly: [0, 2^53], as on the other pages.
uint64_t seed_of(const json& r) {
    if (!r.contains("seed")) return 0;
    const json& v = r["seed"];
    constexpr uint64_t kMax = uint64_t{1} << 53;
    if (v.is_number_unsigned() && v.get<uint64_t>() <= kMax) return v.get<uint64_t>();
    if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() <= static_cast<double>(kMax) &&
        v.get<double>() == std::floor(v.get<double>()))
        return static_cast<uint64_t>(v.get<double>());
    throw LabError("seed", fmt::format("seed: must be an integer in [0, {}], got {}", kMax, shown(v)));
}

json info_json(const check::ExerciseInfo& e) {
    return {{"number", e.number}, {"name", e.name}, {"title", e.title}, {"lesson", e.lesson}, {"answer", e.answer}};
}

std::string b64(const std::string& bytes) {
    return base64_encode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// Strict base64 (the standard alphabet, '=' padding only at the end); the decoded size is
// bounded before anything is decoded.
std::string answer_bytes(const json& r) {
    if (!r.contains("answer") || !r["answer"].is_string())
        throw LabError("answer", "answer: give the bytes of your .npy or .npz file, base64");
    const std::string& s = r["answer"].get_ref<const std::string&>();
    if (s.empty() || s.size() % 4 != 0) throw LabError("answer", "answer: not base64 (its length is no multiple of 4)");
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    const size_t pad = s.size() - std::min(s.find_last_not_of('=') + 1, s.size());
    if (pad > 2) throw LabError("answer", "answer: not base64 (more than two '=' at the end)");
    if (s.size() / 4 * 3 - pad > kLabMaxAnswerBytes)
        throw LabError("answer", fmt::format("answer: the file has {} bytes; the lab takes at most {}",
                                             s.size() / 4 * 3 - pad, kLabMaxAnswerBytes));
    std::string out;
    uint32_t acc = 0;
    for (size_t i = 0; i < s.size() - pad; ++i) {
        const int v = value(s[i]);
        if (v < 0) throw LabError("answer", "answer: not base64 (a character outside A-Z a-z 0-9 + /)");
        acc = (acc << 6) | static_cast<uint32_t>(v);
        if (i % 4 == 3) {
            out.push_back(static_cast<char>((acc >> 16) & 0xff));
            out.push_back(static_cast<char>((acc >> 8) & 0xff));
            out.push_back(static_cast<char>(acc & 0xff));
            acc = 0;
        }
    }
    if (pad == 1) {
        out.push_back(static_cast<char>((acc >> 10) & 0xff));
        out.push_back(static_cast<char>((acc >> 2) & 0xff));
    } else if (pad == 2) {
        out.push_back(static_cast<char>((acc >> 4) & 0xff));
    }
    return out;
}

std::string exercise_command(const check::ExerciseInfo& e, uint64_t seed) {
    return fmt::format("attn exercise {} --seed {}", e.number, seed);
}

}  // namespace

json lab_exercise(const json& r) {
    check_fields(r, {"exercise", "seed"});
    const check::ExerciseInfo& e = exercise_of(r);
    const uint64_t seed = seed_of(r);
    const Dump inputs = check::exercise_inputs(e, seed);
    json all = json::array();
    for (const check::ExerciseInfo& x : check::exercises()) all.push_back(info_json(x));
    return {{"format", "attn-lab-exercise"},
            {"version", 1},
            {"exercises", all},
            {"exercise", info_json(e)},
            {"seed", seed},
            {"answer_shape", check::answer_shape(e, inputs)},
            {"task", check::exercise_task(e, inputs, "inputs.npz", "answer.npy")},
            {"inputs", b64(dump_to_npz(inputs))},
            {"command", exercise_command(e, seed)},
            {"check_command", exercise_command(e, seed) + " --check answer.npy"}};
}

json lab_exercise_check(const json& r) {
    check_fields(r, {"exercise", "seed", "answer"});
    const check::ExerciseInfo& e = exercise_of(r);
    const uint64_t seed = seed_of(r);
    const std::string bytes = answer_bytes(r);
    const bool npz = bytes.rfind("PK\x03\x04", 0) == 0, npy = bytes.rfind("\x93NUMPY", 0) == 0;
    if (!npz && !npy)
        throw LabError("answer", "answer: not a .npy file (np.save) or an .npz file (np.savez): its first bytes "
                                 "are neither \\x93NUMPY nor PK");
    check::CheckReport report;
    try {
        const Dump inputs = check::exercise_inputs(e, seed);
        bool f64 = false;
        const Tensor answer = exercise_answer_from_bytes(e, bytes, "answer", npz, f64);
        report = check::grade_exercise(e, inputs, answer, f64, "answer");
    } catch (const InputError& x) {
        const std::string what = x.what();
        throw LabError("answer", printable(what.rfind("answer", 0) == 0 ? what : "answer: " + what));
    }
    const bool pass = report.first_divergence.empty();
    return {{"format", "attn-lab-exercise-check"},
            {"version", 1},
            {"exercise", info_json(e)},
            {"seed", seed},
            // non-finite numbers as attn's JSON writes them ("Infinity", "NaN"), as --json does
            {"check", json::parse(json_text(check::report_json(report), -1, JsonNonFinite::string))},
            {"pass", pass},
            {"hint", pass ? "" : check::exercise_hint(e, report)},
            {"command", exercise_command(e, seed) + fmt::format(" --check answer.{} --json", npz ? "npz" : "npy")}};
}

}  // namespace attn::cli
