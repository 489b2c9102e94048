// `attn exercise`: exercises along the tour. --list names them; `attn exercise N` writes
// the inputs (npz, settings in its metadata) and the task (what to compute, the shapes,
// a numpy skeleton); `attn exercise N --check ANSWER` grades an answer through the
// comparison and the catalogue of `attn check` (lib/check/exercise.hpp).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "attn/check/exercise.hpp"
#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/io/npy.hpp"
#include "command.hpp"
#include "exercise_answer.hpp"
#include "options.hpp"
#include "tensor_files.hpp"

namespace attn::cli {
namespace {

struct ExerciseOpts {
    std::string which, out, check;
    uint64_t seed = 0;
    bool list = false;
    JsonOut json;
    const CLI::Option* seed_opt = nullptr;
};

void list_exercises(const ExerciseOpts& o) {
    if (o.json.given()) {
        nlohmann::ordered_json doc = {{"format", "attn-exercises"}, {"version", 1}};
        nlohmann::ordered_json all = nlohmann::ordered_json::array();
        for (const check::ExerciseInfo& e : check::exercises())
            all.push_back({{"number", e.number}, {"name", e.name}, {"title", e.title}, {"lesson", e.lesson},
                           {"answer", e.answer}});
        doc["exercises"] = all;
        write_json(o.json, doc, "attn-exercises", 1);
        if (o.json.to_stdout()) return;
    }
    const TextOut text({o.json.claim()});
    for (const check::ExerciseInfo& e : check::exercises())
        text.print("{:>2}  {:<13} {:<44} lesson {}\n", e.number, e.name, e.title, e.lesson);
    text.print("\nattn exercise NAME writes its inputs and task; attn exercise NAME --check answer.npy grades it.\n");
}

// The answer file: .npy, or .npz holding the answer's name (or one array alone).
Tensor read_answer(const check::ExerciseInfo& e, const std::string& path, bool& f64) {
    try {
        if (!has_extension(path, ".npy") && !has_extension(path, ".npz"))
            throw InputError("an answer is a .npy file (np.save) or an .npz file (np.savez)");
        return exercise_answer_from_bytes(e, read_file(path), path, has_extension(path, ".npz"), f64);
    } catch (const InputError& e) {  // the readers name the file already; the rules here do not
        const std::string what = e.what();
        if (what.rfind(path, 0) == 0) throw;
        throw InputError(fmt::format("{}: {}", path, what));
    }
}

// The seed of the inputs an answer belongs to: --seed, or the inputs.npz beside the answer.
uint64_t answer_seed(const ExerciseOpts& o, const check::ExerciseInfo& e) {
    const std::string beside = (std::filesystem::path(o.check).parent_path() / "inputs.npz").string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(beside, ec)) return o.seed;
    const Dump d = with_option(beside, [&] { return read_dump_any(beside); });
    if (d.config.value("exercise", std::string()) != e.name) return o.seed;
    const uint64_t s = d.config.value("seed", uint64_t{0});
    if (o.seed_opt->count() > 0 && s != o.seed)
        throw InputError(
            fmt::format("--seed: {}, but {} beside the answer was written with --seed {}", o.seed, beside, s));
    return s;
}

int check_answer(const ExerciseOpts& o, const check::ExerciseInfo& e) {
    require_json_writable(o.json);
    const TextOut text({o.json.claim()});
    const uint64_t seed = answer_seed(o, e);
    const Dump inputs = check::exercise_inputs(e, seed);
    bool f64 = false;
    const Tensor answer = read_answer(e, o.check, f64);
    const check::CheckReport r = check::grade_exercise(e, inputs, answer, f64, o.check);
    if (o.json.given()) write_json(o.json, check::report_json(r), "attn-check", 1);
    if (o.json.to_stdout()) return r.first_divergence.empty() ? 0 : 3;
    text.print("exercise {} · {} (seed {})\n", e.number, e.title, seed);
    text.print("{}", check::report_text(r));
    if (r.first_divergence.empty()) text.print("pass\n");
    else text.print("not yet\n{}\n", check::exercise_hint(e, r));
    return r.first_divergence.empty() ? 0 : 3;
}

int write_exercise(const ExerciseOpts& o, const check::ExerciseInfo& e) {
    const std::string dir = o.out.empty() ? "exercise-" + e.name : o.out;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir, ec))
        throw InputError(fmt::format("--output: cannot make the folder '{}'", dir));
    const std::string inputs_path = dir + "/inputs.npz", task_path = dir + "/task.md";
    require_writable("--output", inputs_path);
    const Dump inputs = check::exercise_inputs(e, o.seed);
    const std::string task = check::exercise_task(e, inputs, "inputs.npz", "answer.npy");
    with_option("--output", [&] {
        write_dump_file(inputs_path, inputs);
        write_file_atomic(task_path, task);
    });
    fmt::print("{}\nwrote {} and {}; work in {}, then run the check line above there\n", task, inputs_path, task_path,
               dir);
    return 0;
}

int run_exercise(const ExerciseOpts& o) {
    if (o.list) {
        if (!o.which.empty()) throw InputError("--list: lists every exercise; give no exercise with it");
        list_exercises(o);
        return 0;
    }
    if (o.which.empty()) throw InputError("exercise: give an exercise (a number or a name) or --list");
    const check::ExerciseInfo& e = with_option("exercise", [&] { return check::find_exercise(o.which); });
    if (!o.check.empty()) return check_answer(o, e);
    if (o.json.given()) throw InputError("--json: goes with --list or --check");
    return write_exercise(o, e);
}

Command exercise_cmd{"exercise", "Exercises along the tour: write attention yourself and get it checked", 56,
            [](CLI::App& sub) -> Runner {
                auto o = std::make_shared<ExerciseOpts>();
                sub.footer(
                    "attn exercise --list                  the exercises, each with the lesson that teaches it\n"
                    "attn exercise causal [-o DIR]         writes DIR/inputs.npz and DIR/task.md (default DIR:\n"
                    "                                      exercise-NAME): what to compute and a numpy skeleton\n"
                    "attn exercise causal --check answer.npy   grades an answer (.npy or .npz): pass, or the\n"
                    "                                      stage table, the diagnosis and a hint (exit 3)\n"
                    "Inputs depend on --seed; --check takes the seed of the inputs.npz beside the answer.");
                sub.add_option("exercise", o->which, "the exercise: its number (1-12) or name");
                sub.add_flag("--list", o->list, "list the exercises");
                sub.add_option("--output,-o", o->out, "the folder for inputs.npz and task.md (default exercise-NAME)");
                sub.add_option("--check", o->check, "grade this answer file (.npy or .npz)");
                o->seed_opt = sub.add_option("--seed", o->seed, "seed of the inputs")
                                  ->capture_default_str()
                                  ->check(seed_validator());
                add_json(sub, o->json, "attn-exercises");
                return [o] { return run_exercise(*o); };
            }};

}  // namespace
}  // namespace attn::cli
