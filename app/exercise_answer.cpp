// app/exercise_answer.cpp: see exercise_answer.hpp.
#include "exercise_answer.hpp"

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/io/dump_file.hpp"
#include "attn/io/npy.hpp"

namespace attn::cli {

Tensor exercise_answer_from_bytes(const check::ExerciseInfo& e, std::string_view bytes, const std::string& what,
                                  bool npz, bool& f64) {
    NpyArray a;
    if (!npz) {
        a = npy_from_string(bytes, what);
    } else {
        const auto entries = zip_entries(bytes, what);
        const ZipEntry* pick = nullptr;
        for (const ZipEntry& z : entries)
            if (z.name == e.answer + ".npy") pick = &z;
        if (pick == nullptr && entries.size() == 1) pick = &entries[0];
        if (pick == nullptr) throw InputError(fmt::format("holds no array '{}' (and more than one array)", e.answer));
        a = npy_from_string(pick->data, what + ": " + pick->name);
    }
    if (a.is_bool())
        throw InputError(
            fmt::format("{}: a boolean array ('{}'); the answer is float32 or float64", e.answer, a.descr));
    f64 = a.kind == NpyArray::Kind::F64;
    return a.values;
}

}  // namespace attn::cli
