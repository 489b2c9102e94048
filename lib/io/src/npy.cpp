#include "attn/io/npy.hpp"

#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"

namespace attn {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

[[noreturn]] void fail(std::string_view what, const std::string& why) {
    throw InputError(fmt::format("{}: not a .npy file attn reads: {}", what, why));
}

// The header dict, parsed strictly: one '{', keys 'descr', 'fortran_order' and
// 'shape' exactly once each, separated by commas (one trailing comma allowed), '}',
// then only spaces up to a final '\n'.
struct Header {
    std::string descr;
    bool fortran = false;
    Shape shape;
};

class HeaderParser {
public:
    HeaderParser(std::string_view s, std::string_view what) : s_(s), what_(what) {}

    Header parse() {
        Header h;
        bool have_descr = false, have_order = false, have_shape = false;
        skip_ws();
        expect('{');
        for (;;) {
            skip_ws();
            if (peek() == '}') break;
            const std::string key = string_literal();
            skip_ws();
            expect(':');
            skip_ws();
            if (key == "descr") {
                if (have_descr) bad("the key 'descr' appears twice");
                if (peek() == '[')
                    bad("a structured dtype (a list of fields) is not read; only '<f4', '<f8', '|b1', '|u1'");
                h.descr = string_literal();
                have_descr = true;
            } else if (key == "fortran_order") {
                if (have_order) bad("the key 'fortran_order' appears twice");
                h.fortran = boolean();
                have_order = true;
            } else if (key == "shape") {
                if (have_shape) bad("the key 'shape' appears twice");
                h.shape = tuple();
                have_shape = true;
            } else {
                bad(fmt::format("unknown header key '{}' (only 'descr', 'fortran_order', 'shape')", key));
            }
            skip_ws();
            if (peek() == ',') {
                ++i_;
                continue;
            }
            if (peek() != '}') bad("expected ',' or '}' in the header dict");
        }
        expect('}');
        while (i_ < s_.size() && s_[i_] == ' ') ++i_;
        if (i_ + 1 != s_.size() || s_[i_] != '\n') bad("the header must end with spaces and one '\\n' after the dict");
        if (!have_descr || !have_order || !have_shape)
            bad("the header dict needs the keys 'descr', 'fortran_order' and 'shape'");
        return h;
    }

private:
    std::string_view s_, what_;
    size_t i_ = 0;

    [[noreturn]] void bad(const std::string& why) const { fail(what_, why); }
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    void skip_ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
    }
    void expect(char c) {
        if (peek() != c) bad(fmt::format("expected '{}' at byte {} of the header", c, i_));
        ++i_;
    }
    std::string string_literal() {
        const char q = peek();
        if (q != '\'' && q != '"') bad(fmt::format("expected a quoted string at byte {} of the header", i_));
        ++i_;
        const size_t start = i_;
        while (i_ < s_.size() && s_[i_] != q) {
            if (s_[i_] == '\\' || s_[i_] == '\n') bad("escapes and line breaks in header strings are not read");
            ++i_;
        }
        if (i_ >= s_.size()) bad("an unterminated string in the header");
        std::string out(s_.substr(start, i_ - start));
        ++i_;
        return out;
    }
    bool boolean() {
        if (s_.substr(i_, 4) == "True") {
            i_ += 4;
            return true;
        }
        if (s_.substr(i_, 5) == "False") {
            i_ += 5;
            return false;
        }
        bad("'fortran_order' must be True or False");
    }
    // (), (N,), (N, M), (N, M,) of non-negative decimal integers.
    Shape tuple() {
        expect('(');
        Shape shape;
        for (;;) {
            skip_ws();
            if (peek() == ')') break;
            if (peek() < '0' || peek() > '9') bad(fmt::format("expected a size at byte {} of the shape", i_));
            int64_t v = 0;
            while (peek() >= '0' && peek() <= '9') {
                const int d = peek() - '0';
                if (v > (std::numeric_limits<int64_t>::max() - d) / 10) bad("a dimension of the shape overflows int64");
                v = v * 10 + d;
                ++i_;
            }
            if (peek() == 'L') ++i_;  // Python 2's long suffix, as numpy still accepts
            shape.push_back(v);
            if (shape.size() > kNpyMaxRank) bad(fmt::format("more than {} dimensions", kNpyMaxRank));
            skip_ws();
            if (peek() == ',') {
                ++i_;
                continue;
            }
            if (peek() != ')') bad("expected ',' or ')' in the shape");
        }
        expect(')');
        return shape;
    }
};

uint64_t read_le(const unsigned char* p, int n) {
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
    return v;
}

std::string header_bytes(std::string_view descr, const Shape& shape) {
    std::string dims;
    for (size_t k = 0; k < shape.size(); ++k) dims += fmt::format("{}{}", k ? ", " : "", shape[k]);
    if (shape.size() == 1) dims += ",";
    std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
    // magic (6) + version (2) + length (2) + dict + padding + '\n' = a multiple of 64
    const size_t used = 10 + dict.size() + 1;
    dict.append((64 - used % 64) % 64, ' ');
    dict += '\n';
    if (dict.size() > 65535)
        throw InputError("npy: the header of a rank-" + std::to_string(shape.size()) + " array is too long");
    std::string out(kMagic);
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(dict.size() & 0xff);
    out += static_cast<char>((dict.size() >> 8) & 0xff);
    out += dict;
    return out;
}

}  // namespace

NpyArray npy_from_string(std::string_view bytes, std::string_view what) {
    if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) fail(what, "no \\x93NUMPY magic at the start");
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
    const int major = u[6], minor = u[7];
    if (!((major == 1 || major == 2) && minor == 0))
        fail(what, fmt::format("version {}.{} (only 1.0 and 2.0 are read)", major, minor));
    const int len_bytes = major == 1 ? 2 : 4;
    if (bytes.size() < static_cast<size_t>(8 + len_bytes)) fail(what, "the file ends inside the header length");
    const uint64_t hlen = read_le(u + 8, len_bytes);
    if (hlen > kNpyMaxHeader) fail(what, fmt::format("a header of {} bytes (at most {})", hlen, kNpyMaxHeader));
    const uint64_t data_start = 8 + static_cast<uint64_t>(len_bytes) + hlen;
    if (data_start > bytes.size())
        fail(what, fmt::format("the header says {} bytes but the file has {} after the length", hlen,
                               bytes.size() - 8 - static_cast<size_t>(len_bytes)));
    const Header h = HeaderParser(bytes.substr(8 + static_cast<size_t>(len_bytes), hlen), what).parse();
    if (h.fortran) fail(what, "fortran_order is True (only C order is read; save with np.ascontiguousarray)");

    NpyArray a;
    a.descr = h.descr;
    int item = 0;
    if (h.descr == "<f4") {
        a.kind = NpyArray::Kind::F32, item = 4;
    } else if (h.descr == "<f8") {
        a.kind = NpyArray::Kind::F64, item = 8;
    } else if (h.descr == "|b1" || h.descr == "|u1" || h.descr == "<u1") {
        a.kind = NpyArray::Kind::Bool, item = 1;
    } else {
        fail(what, fmt::format("dtype '{}' (only '<f4', '<f8', and '|b1' or '|u1' for booleans are read)", h.descr));
    }
    // Element count and byte size, overflow-checked, against the bytes present.
    uint64_t n = 1;
    for (int64_t d : h.shape) {
        if (d != 0 && n > std::numeric_limits<uint64_t>::max() / 8 / static_cast<uint64_t>(d))
            fail(what, fmt::format("the shape {} overflows", shape_str(h.shape)));
        n *= static_cast<uint64_t>(d);
    }
    const uint64_t need = n * static_cast<uint64_t>(item), have = bytes.size() - data_start;
    if (need != have)
        fail(what, fmt::format("shape {} of '{}' needs {} data bytes, the file has {}", shape_str(h.shape), h.descr,
                               need, have));
    a.values.shape = h.shape;
    a.values.data.resize(static_cast<size_t>(n));
    const char* p = bytes.data() + data_start;
    float* out = a.values.data.data();
    if (a.kind == NpyArray::Kind::F32) {
        if (n) std::memcpy(out, p, static_cast<size_t>(need));
    } else if (a.kind == NpyArray::Kind::F64) {
        for (uint64_t k = 0; k < n; ++k) {
            double v;
            std::memcpy(&v, p + 8 * k, 8);
            out[k] = static_cast<float>(v);
        }
    } else {
        for (uint64_t k = 0; k < n; ++k) {
            const auto v = static_cast<unsigned char>(p[k]);
            if (v > 1)
                fail(what, fmt::format("a boolean ('{}') array holds {} at element {} (only 0 and 1)", h.descr, v, k));
            out[k] = static_cast<float>(v);
        }
    }
    return a;
}

NpyArray read_npy_file(const std::string& path) { return npy_from_string(read_file(path), path); }

std::string npy_to_string(const Tensor& t) {
    if (shape_numel(t.shape) != t.numel())
        throw InputError(fmt::format("npy: shape {} does not hold {} values", shape_str(t.shape), t.numel()));
    std::string out = header_bytes("<f4", t.shape);
    const size_t at = out.size();
    out.resize(at + t.data.size() * sizeof(float));
    if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size() * sizeof(float));
    return out;
}

std::string npy_bool_to_string(const Shape& shape, const std::vector<uint8_t>& values) {
    if (shape_numel(shape) != static_cast<int64_t>(values.size()))
        throw InputError(fmt::format("npy: shape {} does not hold {} values", shape_str(shape), values.size()));
    std::string out = header_bytes("|b1", shape);
    for (uint8_t v : values) {
        if (v > 1) throw InputError("npy: a boolean array holds a value other than 0 and 1");
        out += static_cast<char>(v);
    }
    return out;
}

void save_npy(const std::string& path, const Tensor& t) { write_file_atomic(path, npy_to_string(t)); }

}  // namespace attn
