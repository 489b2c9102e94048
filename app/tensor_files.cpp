#include "tensor_files.hpp"

#include <cmath>
#include <sys/stat.h>

#include <fmt/format.h>

#include "memory.hpp"
#include "options.hpp"

namespace attn::cli {
namespace {

// Reading a .npy or .safetensors file holds the file and its float copy: about 3 bytes per byte.
void require_binary_fits(const std::string& opt, const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // the reader names what is wrong
    const double size = static_cast<double>(st.st_size);
    require_fits_in_memory(opt, kProgramBytes + 3.0 * size,
                           fmt::format("reading '{}' ({})", path, format_bytes(size)));
}

Dump from_npy(const std::string& path) {
    NpyArray a = read_npy_file(path);
    if (a.is_bool())
        throw InputError(fmt::format(
            "{}: a boolean array ('{}') cannot be x; a .npy input holds x as float32 or float64", path, a.descr));
    Tensor& x = a.values;
    if (x.rank() == 2) x.shape.insert(x.shape.begin(), 1);  // (T, D) -> (1, T, D)
    if (x.rank() != 3)
        throw InputError(fmt::format("{}: the array is x and must be (B, T, D) or (T, D), got shape {}", path,
                                     shape_str(a.values.shape)));
    Dump d;
    d.tensors["x"] = std::move(x);
    d.order.push_back("x");
    return d;
}

}  // namespace

bool has_extension(const std::string& path, std::string_view ext) {
    return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

Dump read_tensor_file(const std::string& opt, const std::string& path) {
    return with_option(opt, [&] {
        if (has_extension(path, ".npy")) {
            require_binary_fits(opt, path);
            return from_npy(path);
        }
        if (has_extension(path, ".safetensors") || has_extension(path, ".npz")) {
            require_binary_fits(opt, path);
            return read_dump_any(path);
        }
        require_dump_fits_in_memory(opt, path);
        return read_dump_file(path);
    });
}

Mask read_mask_file(const std::string& opt, const std::string& path, int64_t B, int64_t H, int64_t Tq, int64_t Tk) {
    return with_option(opt, [&]() -> Mask {
        Tensor t;
        bool boolean = false;
        if (has_extension(path, ".npy")) {
            require_binary_fits(opt, path);
            NpyArray a = read_npy_file(path);
            boolean = a.is_bool();
            t = std::move(a.values);
        } else {
            const bool binary = has_extension(path, ".safetensors") || has_extension(path, ".npz");
            if (binary) require_binary_fits(opt, path);
            else require_dump_fits_in_memory(opt, path);
            Dump d = read_dump_any(path);
            const bool has_b = d.tensors.count("mask") > 0, has_a = d.tensors.count("additive_mask") > 0;
            if (has_b == has_a)
                throw InputError(fmt::format("'{}' must hold exactly one tensor named mask (boolean, 0 or 1) or "
                                             "additive_mask (float, added to the scores)",
                                             path));
            boolean = has_b;
            t = std::move(d.tensors.at(has_b ? "mask" : "additive_mask"));
        }
        const char* kind = boolean ? "boolean" : "additive";
        // [Tq, Tk] | [B|1, Tq, Tk] | [B|1, H|1, Tq, Tk]
        const Shape& s = t.shape;
        const int r = t.rank();
        const int64_t mb = r >= 3 ? s[0] : 1, mh = r == 4 ? s[1] : 1;
        const bool fits = r >= 2 && r <= 4 && s[static_cast<size_t>(r - 2)] == Tq &&
                          s[static_cast<size_t>(r - 1)] == Tk && (mb == 1 || mb == B) && (mh == 1 || mh == H);
        if (!fits)
            throw InputError(
                fmt::format("'{}': the {} mask of shape {} does not fit the scores [B, H, Tq, Tk] = [{}, {}, {}, "
                            "{}]: it must be [Tq, Tk], [B, Tq, Tk] or [B, H, Tq, Tk], with B and H "
                            "either the run's or 1",
                            path, kind, shape_str(s), B, H, Tq, Tk));
        if (boolean) {
            std::vector<uint8_t> allowed(t.data.size());
            for (size_t k = 0; k < t.data.size(); ++k) {
                if (t.data[k] != 0.0f && t.data[k] != 1.0f)
                    throw InputError(fmt::format("'{}': the boolean mask holds {} (only 0 = masked, 1 = may attend)",
                                                 path, t.data[k]));
                allowed[k] = t.data[k] != 0.0f;
            }
            return r == 4 ? Mask::custom_heads(mb, mh, Tq, Tk, std::move(allowed))
                          : Mask::custom(mb, Tq, Tk, std::move(allowed));
        }
        for (size_t k = 0; k < t.data.size(); ++k)
            if (std::isnan(t.data[k]) || t.data[k] == INFINITY)
                throw InputError(
                    fmt::format("'{}': the additive mask holds {} at flat index {} (only finite values and "
                                "-inf, which masks the pair)",
                                path, t.data[k], k));
        return r == 4 ? Mask::additive_heads(mb, mh, Tq, Tk, std::move(t.data))
                      : Mask::additive_mask(mb, Tq, Tk, std::move(t.data));
    });
}

}  // namespace attn::cli
