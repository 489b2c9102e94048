// The dump in its three file formats (attn/io/dump_file.hpp): JSON, safetensors, npz.
#include "attn/io/dump_file.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <sys/stat.h>

#include <fmt/format.h>

#include "attn/core/errors.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/safetensors.hpp"

namespace attn {
namespace {

bool ends_with(const std::string& s, std::string_view ext) {
    return s.size() > ext.size() && s.compare(s.size() - ext.size(), ext.size(), ext) == 0;
}

// The tensors in dump order: `order` first, then the rest by name (as dump_to_string writes them).
std::vector<std::string> ordered_names(const Dump& d) {
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const std::string& n : d.order)
        if (d.tensors.count(n) && seen.insert(n).second) names.push_back(n);
    for (const auto& [n, t] : d.tensors)
        if (seen.insert(n).second) names.push_back(n);
    return names;
}

// The envelope both binary formats carry beside the tensors.
nlohmann::json meta_json(const Dump& d) {
    return {{"format", d.format}, {"version", d.version}, {"seed", d.seed}, {"config", d.config},
            {"order", ordered_names(d)}};
}

void check_envelope(const std::string& format, int64_t version, std::string_view what) {
    if (format != "attn-dump")
        throw InputError(fmt::format("{}: format '{}' (expected attn-dump)", what, format));
    if (version != 1)
        throw InputError(fmt::format("{}: attn-dump version {} (this attn reads version 1)", what, version));
}

// Reads the order a file recorded, keeping only names it holds, then any it left out.
void take_order(Dump& d, const nlohmann::json& order) {
    d.order.clear();
    std::set<std::string> seen;
    if (order.is_array())
        for (const auto& n : order)
            if (n.is_string() && d.tensors.count(n.get<std::string>()) && seen.insert(n.get<std::string>()).second)
                d.order.push_back(n.get<std::string>());
    for (const auto& [n, t] : d.tensors)
        if (seen.insert(n).second) d.order.push_back(n);
}

void put_le(std::string& out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_le(std::string_view s, size_t at, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<size_t>(i)]);
    return v;
}

uint32_t crc32(std::string_view s) {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    uint32_t c = 0xFFFFFFFFu;
    for (char ch : s) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

// A 0-d byte string array ('|S<n>', shape ()) as a version 1.0 .npy, header padded to 64 bytes.
std::string npy_bytes_scalar(std::string_view text) {
    std::string dict = fmt::format("{{'descr': '|S{}', 'fortran_order': False, 'shape': (), }}", text.size());
    const size_t total = 10 + dict.size() + 1;
    dict.append((64 - total % 64) % 64, ' ');
    dict += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    put_le(out, dict.size(), 2);
    out += dict;
    out += text;
    return out;
}

// The text of a 0-d '|S<n>' array written as npy_bytes_scalar (or by numpy) writes it.
std::string npy_bytes_scalar_text(std::string_view b, std::string_view what) {
    auto bad = [&](const std::string& why) -> std::string {
        throw InputError(fmt::format("{}: __attn__.npy: {}", what, why));
    };
    if (b.size() < 10 || b.substr(0, 6) != std::string_view("\x93NUMPY", 6) || (b[6] != 1 && b[6] != 2))
        return bad("not a .npy file of version 1 or 2");
    const int len_bytes = b[6] == 1 ? 2 : 4;
    const uint64_t hlen = get_le(b, 8, len_bytes);
    const uint64_t start = 8 + static_cast<uint64_t>(len_bytes) + hlen;
    if (hlen > kNpyMaxHeader || start > b.size()) return bad("the header runs past the end");
    const std::string_view h = b.substr(8 + static_cast<size_t>(len_bytes), hlen);
    const size_t d = h.find("'descr': '|S");
    if (d == std::string_view::npos || h.find("'shape': ()") == std::string_view::npos ||
        h.find("'fortran_order': False") == std::string_view::npos)
        return bad("expected a 0-d byte string ('|S<n>', shape ())");
    uint64_t n = 0;
    size_t i = d + 12;
    while (i < h.size() && h[i] >= '0' && h[i] <= '9' && n < (uint64_t{1} << 40))
        n = n * 10 + static_cast<uint64_t>(h[i++] - '0');
    if (i >= h.size() || h[i] != '\'') return bad("a malformed '|S<n>' dtype");
    if (b.size() - start != n)
        return bad(fmt::format("'|S{}' needs {} bytes, the entry has {}", n, n, b.size() - start));
    std::string text(b.substr(static_cast<size_t>(start)));
    while (!text.empty() && text.back() == '\0') text.pop_back();  // numpy pads a byte string with NULs
    return text;
}

}  // namespace

const char* dump_format_name(DumpFormat f) {
    switch (f) {
        case DumpFormat::json: return "json";
        case DumpFormat::safetensors: return "safetensors";
        case DumpFormat::npz: return "npz";
    }
    return "?";
}

DumpFormat dump_format_of(const std::string& path) {
    if (path == "-" || ends_with(path, ".json")) return DumpFormat::json;
    if (ends_with(path, ".safetensors")) return DumpFormat::safetensors;
    if (ends_with(path, ".npz")) return DumpFormat::npz;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
        return DumpFormat::json;  // a device or pipe (/dev/null, a FIFO) takes the stream format
    throw InputError(fmt::format("'{}': a dump file ends in .safetensors, .npz or .json", path));
}

// ---- safetensors ----

std::string dump_to_safetensors(const Dump& d) {
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& n : ordered_names(d)) tensors.emplace_back(n, d.tensors.at(n));
    std::map<std::string, std::string> meta{{"format", d.format},
                                            {"version", std::to_string(d.version)},
                                            {"seed", std::to_string(d.seed)},
                                            {"config", json_text(d.config, -1, JsonNonFinite::string)},
                                            {"order", nlohmann::json(ordered_names(d)).dump()}};
    if (d.config.is_object() && d.config.contains("mask") && d.config["mask"].is_string())
        meta["mask"] = d.config["mask"].get<std::string>();
    return safetensors_to_string(tensors, meta);
}

Dump dump_from_safetensors(std::string bytes, std::string_view what) {
    const SafeTensors st = SafeTensors::parse(std::move(bytes), what);
    const std::string w(what);
    Dump d;
    const auto& meta = st.metadata();
    if (auto f = meta.find("format"); f != meta.end()) {
        const auto v = meta.find("version");
        int64_t version = -1;
        if (v != meta.end() && !v->second.empty() && v->second.size() < 10 &&
            v->second.find_first_not_of("0123456789") == std::string::npos)
            version = std::stoll(v->second);
        check_envelope(f->second, version, what);
    }
    if (auto it = meta.find("seed"); it != meta.end()) {
        const std::string& s = it->second;
        if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos)
            throw InputError(fmt::format("{}: __metadata__.seed '{}' is not an unsigned integer", what, s));
        try {
            d.seed = std::stoull(s);
        } catch (const std::exception&) {
            throw InputError(fmt::format("{}: __metadata__.seed '{}' is over 2^64 - 1", what, s));
        }
    }
    if (auto it = meta.find("config"); it != meta.end()) {
        d.config = parse_json_relaxed(it->second, w + ": __metadata__.config");
        if (!d.config.is_object()) throw InputError(fmt::format("{}: __metadata__.config must be a JSON object", what));
    }
    for (const std::string& name : st.names()) {
        const SafeTensorInfo& info = st.info(name);
        if (info.dtype == DType::BOOL || info.dtype == DType::U8) {
            if (name != "mask")
                throw InputError(fmt::format("{}: tensor {} is {}: only the boolean tensor mask may be BOOL or U8",
                                             what, name, dtype_name(info.dtype)));
            const std::string_view raw = st.bytes(name);
            Tensor t(info.shape);
            for (size_t k = 0; k < raw.size(); ++k) {
                const auto v = static_cast<unsigned char>(raw[k]);
                if (v > 1) throw InputError(fmt::format("{}: tensor mask holds {} (only 0 and 1)", what, v));
                t.data[k] = static_cast<float>(v);
            }
            d.tensors[name] = std::move(t);
        } else {
            d.tensors[name] = st.to_float(name);
        }
    }
    nlohmann::json order;
    if (auto it = meta.find("order"); it != meta.end())
        order = parse_json_relaxed(it->second, w + ": __metadata__.order");
    take_order(d, order);
    return d;
}

// ---- zip (stored) and npz ----

std::string zip_stored(const std::vector<std::pair<std::string, std::string>>& entries) {
    std::string out, central;
    // 1980-01-01 00:00, the zip epoch: the archive's bytes depend on its content only.
    constexpr uint16_t kTime = 0, kDate = (0 << 9) | (1 << 5) | 1;
    for (const auto& entry : entries) {
        // named references, not a structured binding: clang before 16 cannot capture one
        const std::string& name = entry.first;
        const std::string& data = entry.second;
        if (data.size() >= 0xFFFFFFFFull || out.size() + data.size() + name.size() + 30 >= 0xFFFFFFFFull)
            throw InputError(fmt::format("npz: '{}' would take the archive past 4 GiB (ZIP64 is not written); "
                                         "use .safetensors",
                                         name));
        const uint32_t crc = crc32(data);
        const uint64_t offset = out.size();
        // from "version needed" to the extra field's length, the local header and the central
        // directory's entry hold the same fields
        auto put_entry_fields = [&](std::string& to) {
            put_le(to, 20, 2);  // version needed: 2.0
            put_le(to, 0, 2);   // flags
            put_le(to, 0, 2);   // method: stored
            put_le(to, kTime, 2);
            put_le(to, kDate, 2);
            put_le(to, crc, 4);
            put_le(to, data.size(), 4);  // compressed size
            put_le(to, data.size(), 4);  // size
            put_le(to, name.size(), 2);
            put_le(to, 0, 2);  // extra
        };
        put_le(out, 0x04034b50, 4);
        put_entry_fields(out);
        out += name;
        out += data;
        put_le(central, 0x02014b50, 4);
        put_le(central, 20, 2);  // made by
        put_entry_fields(central);
        put_le(central, 0, 2);  // comment
        put_le(central, 0, 2);  // disk
        put_le(central, 0, 2);  // internal attributes
        put_le(central, 0x81A40000u, 4);  // external: a regular file, rw-r--r--
        put_le(central, offset, 4);
        central += name;
    }
    if (entries.size() >= 0xFFFF) throw InputError("npz: more than 65534 entries (ZIP64 is not written)");
    const uint64_t cd_offset = out.size();
    out += central;
    put_le(out, 0x06054b50, 4);
    put_le(out, 0, 2);
    put_le(out, 0, 2);
    put_le(out, entries.size(), 2);
    put_le(out, entries.size(), 2);
    put_le(out, central.size(), 4);
    put_le(out, cd_offset, 4);
    put_le(out, 0, 2);
    return out;
}

std::vector<ZipEntry> zip_entries(std::string_view b, std::string_view what) {
    auto bad = [&](const std::string& why) {
        throw InputError(fmt::format("{}: not an npz attn reads: {}", what, why));
    };
    // The end-of-central-directory record: 22 bytes plus a comment of at most 65535.
    if (b.size() < 22) bad("shorter than a zip end record");
    size_t eocd = std::string_view::npos;
    const size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
    for (size_t at = b.size() - 22;; --at) {
        if (get_le(b, at, 4) == 0x06054b50 && at + 22 + get_le(b, at + 20, 2) == b.size()) {
            eocd = at;
            break;
        }
        if (at == lowest) break;
    }
    if (eocd == std::string_view::npos) bad("no zip end record");
    const uint64_t count = get_le(b, eocd + 10, 2), cd_size = get_le(b, eocd + 12, 4), cd_off = get_le(b, eocd + 16, 4);
    if (get_le(b, eocd + 4, 2) != 0 || get_le(b, eocd + 6, 2) != 0 || get_le(b, eocd + 8, 2) != count)
        bad("a multi-disk archive");
    if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF)
        bad("a ZIP64 archive (over 4 GiB or 65535 entries)");
    if (cd_off + cd_size > eocd) bad("the central directory runs past its end record");
    std::vector<ZipEntry> out;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    std::set<std::string> names;
    size_t p = static_cast<size_t>(cd_off);
    for (uint64_t e = 0; e < count; ++e) {
        if (p + 46 > cd_off + cd_size || get_le(b, p, 4) != 0x02014b50)
            bad(fmt::format("central entry {} is malformed", e));
        const uint64_t flags = get_le(b, p + 8, 2), method = get_le(b, p + 10, 2), crc = get_le(b, p + 16, 4);
        uint64_t csize = get_le(b, p + 20, 4), usize = get_le(b, p + 24, 4);
        const uint64_t nlen = get_le(b, p + 28, 2), xlen = get_le(b, p + 30, 2), clen = get_le(b, p + 32, 2);
        uint64_t local = get_le(b, p + 42, 4);
        if (p + 46 + nlen + xlen + clen > cd_off + cd_size)
            bad(fmt::format("central entry {} runs past the directory", e));
        std::string name(b.substr(p + 46, nlen));
        // A ZIP64 extra field (Python writes one for large sizes): read the sizes and offset it holds.
        for (size_t x = p + 46 + nlen; x + 4 <= p + 46 + nlen + xlen;) {
            const uint64_t id = get_le(b, x, 2), len = get_le(b, x + 2, 2);
            if (x + 4 + len > p + 46 + nlen + xlen) bad(fmt::format("'{}': an extra field runs past its entry", name));
            if (id == 0x0001) {
                size_t y = x + 4;
                auto take = [&](uint64_t& v) {
                    if (v != 0xFFFFFFFF) return;
                    if (y + 8 > x + 4 + len) bad(fmt::format("'{}': a short ZIP64 field", name));
                    v = get_le(b, y, 8);
                    y += 8;
                };
                take(usize);
                take(csize);
                take(local);
            }
            x += 4 + len;
        }
        if (flags & 1) bad(fmt::format("'{}' is encrypted", name));
        if (method != 0)
            bad(fmt::format("'{}' is compressed (method {}); attn reads np.savez archives, not np.savez_compressed",
                            name, method));
        if (csize != usize) bad(fmt::format("'{}': a stored entry whose sizes differ", name));
        if (!names.insert(name).second) bad(fmt::format("the name '{}' appears twice", name));
        if (local + 30 > b.size() || get_le(b, local, 4) != 0x04034b50) bad(fmt::format("'{}': no local header", name));
        const uint64_t start = local + 30 + get_le(b, local + 26, 2) + get_le(b, local + 28, 2);
        if (start > cd_off || csize > cd_off - start) bad(fmt::format("'{}': its data runs past the entries", name));
        for (const auto& [s, en] : ranges)
            if (local < en && s < start + csize) bad(fmt::format("'{}' overlaps another entry", name));
        ranges.emplace_back(local, start + csize);
        const std::string_view data = b.substr(static_cast<size_t>(start), static_cast<size_t>(csize));
        if (crc32(data) != crc) bad(fmt::format("'{}': CRC mismatch (the file is damaged)", name));
        out.push_back({std::move(name), data});
        p += 46 + nlen + xlen + clen;
    }
    return out;
}

std::string dump_to_npz(const Dump& d) {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const std::string& n : ordered_names(d)) {
        const Tensor& t = d.tensors.at(n);
        bool boolean = n == "mask";
        for (size_t k = 0; boolean && k < t.data.size(); ++k)  // -0.0 is kept as a float, bit for bit
            boolean = (t.data[k] == 0.0f && !std::signbit(t.data[k])) || t.data[k] == 1.0f;
        if (boolean) {
            std::vector<uint8_t> v(t.data.size());
            for (size_t k = 0; k < v.size(); ++k) v[k] = t.data[k] != 0.0f;
            entries.emplace_back(n + ".npy", npy_bool_to_string(t.shape, v));
        } else {
            entries.emplace_back(n + ".npy", npy_to_string(t));
        }
    }
    entries.emplace_back("__attn__.npy", npy_bytes_scalar(json_text(meta_json(d), -1, JsonNonFinite::string)));
    return zip_stored(entries);
}

Dump dump_from_npz(std::string_view bytes, std::string_view what) {
    const std::string w(what);
    Dump d;
    nlohmann::json meta;
    for (const ZipEntry& e : zip_entries(bytes, what)) {
        if (e.name.size() < 5 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
            throw InputError(fmt::format("{}: entry '{}' is not a .npy array", what, e.name));
        const std::string name = e.name.substr(0, e.name.size() - 4);
        if (name == "__attn__") {
            meta = parse_json_relaxed(npy_bytes_scalar_text(e.data, what), w + ": __attn__");
            continue;
        }
        NpyArray a = npy_from_string(e.data, w + ": " + e.name);
        if (a.is_bool() && name != "mask")
            throw InputError(
                fmt::format("{}: {} is boolean ('{}'): only the tensor mask may be", what, e.name, a.descr));
        d.tensors[name] = std::move(a.values);
    }
    nlohmann::json order;
    if (!meta.is_null()) {
        if (!meta.is_object() || !meta.contains("format") || !meta["format"].is_string() || !meta.contains("version") ||
            !meta["version"].is_number_integer())
            throw InputError(fmt::format("{}: __attn__ must be a JSON object with a format and a version", what));
        check_envelope(meta["format"].get<std::string>(), meta["version"].get<int64_t>(), what);
        if (meta.contains("seed")) {
            if (!meta["seed"].is_number_unsigned())
                throw InputError(fmt::format("{}: __attn__.seed must be an unsigned integer", what));
            d.seed = meta["seed"].get<uint64_t>();
        }
        if (meta.contains("config")) {
            if (!meta["config"].is_object())
                throw InputError(fmt::format("{}: __attn__.config must be an object", what));
            d.config = meta["config"];
        }
        if (meta.contains("order")) order = meta["order"];
    }
    take_order(d, order);
    return d;
}

// ---- by extension ----

void write_dump_file(const std::string& path, const Dump& d, JsonNonFinite nonfinite) {
    switch (dump_format_of(path)) {
        case DumpFormat::json: write_file_atomic(path, dump_to_string(d, nonfinite)); return;
        case DumpFormat::safetensors: write_file_atomic(path, dump_to_safetensors(d)); return;
        case DumpFormat::npz: write_file_atomic(path, dump_to_npz(d)); return;
    }
}

Dump read_dump_any(const std::string& path) {
    if (ends_with(path, ".safetensors")) return dump_from_safetensors(read_file(path), path);
    if (ends_with(path, ".npz")) return dump_from_npz(read_file(path), path);
    return read_dump_file(path);
}

}  // namespace attn
