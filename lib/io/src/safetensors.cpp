// safetensors.cpp: the strict .safetensors reader and the small writer.
// See attn/io/safetensors.hpp for the format and the checks.
#include "attn/io/safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/guards.hpp"

namespace attn {

namespace {

struct DTypeRow {
    const char* name;
    DType dtype;
    int size;
};
constexpr DTypeRow kDTypes[] = {
    {"F64", DType::F64, 8}, {"F32", DType::F32, 4}, {"F16", DType::F16, 2}, {"BF16", DType::BF16, 2},
    {"I64", DType::I64, 8}, {"I32", DType::I32, 4}, {"I16", DType::I16, 2}, {"I8", DType::I8, 1},
    {"U8", DType::U8, 1},   {"BOOL", DType::BOOL, 1},
};

[[noreturn]] void fail(std::string_view what, const std::string& msg) {
    throw InputError(std::string(what) + ": not a valid safetensors file: " + msg);
}

// IEEE half -> float, every case (subnormals, inf, NaN).
float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            mant &= 0x3FFu;
            bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

}  // namespace

const char* dtype_name(DType d) {
    for (const auto& r : kDTypes)
        if (r.dtype == d) return r.name;
    return "?";
}

int dtype_size(DType d) {
    for (const auto& r : kDTypes)
        if (r.dtype == d) return r.size;
    return 0;
}

SafeTensors SafeTensors::load(const std::string& path) {
    // read_file: a regular file or a one-line refusal (a FIFO, a folder or a device is never read)
    return parse(read_file(path), path);
}

SafeTensors SafeTensors::parse(std::string bytes, std::string_view what) {
    // pass 1: the 8-byte header length and the header bytes
    SafeTensors st;
    st.what_ = std::string(what);
    if (bytes.size() < 8) fail(what, "shorter than the 8-byte header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
    if (n > kSafetensorsMaxHeader)
        fail(what, "header length " + std::to_string(n) + " exceeds the cap of " +
                       std::to_string(kSafetensorsMaxHeader) + " bytes");
    if (n > bytes.size() - 8)
        fail(what, "header length " + std::to_string(n) + " runs past the end of the file (" +
                       std::to_string(bytes.size()) + " bytes)");
    const std::string_view header(bytes.data() + 8, static_cast<size_t>(n));
    if (header.empty() || header[0] != '{') fail(what, "the header is not a JSON object");
    if (json_depth(header, 8) > 8) fail(what, "the header nests deeper than a safetensors header can");

    // pass 2: parse the JSON (no exceptions: a discarded value means a syntax error)
    const nlohmann::json h = nlohmann::json::parse(header.begin(), header.end(), nullptr, false);
    if (h.is_discarded() || !h.is_object()) fail(what, "the header is not valid JSON");

    // pass 3: every entry, checked against the data section
    const uint64_t data_size = bytes.size() - 8 - n;
    for (const auto& [name, v] : h.items()) {
        if (name == "__metadata__") {
            if (!v.is_object()) fail(what, "__metadata__ must be an object of strings");
            for (const auto& [k, s] : v.items()) {
                if (!s.is_string()) fail(what, "__metadata__[\"" + k + "\"] is not a string");
                st.metadata_[k] = s.get<std::string>();
            }
            continue;
        }
        const std::string where = "tensor '" + name + "'";
        if (!v.is_object()) fail(what, where + " is not an object");
        if (!v.contains("dtype") || !v["dtype"].is_string()) fail(what, where + " has no dtype string");
        if (!v.contains("shape") || !v["shape"].is_array()) fail(what, where + " has no shape array");
        if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
            fail(what, where + " needs data_offsets [BEGIN, END]");
        SafeTensorInfo info;
        const std::string dt = v["dtype"].get<std::string>();
        int esize = 0;
        for (const auto& r : kDTypes)
            if (dt == r.name) info.dtype = r.dtype, esize = r.size;
        if (esize == 0) fail(what, where + " has unknown dtype '" + dt + "'");
        // byte size = prod(shape) * esize, overflow checked in uint64
        uint64_t nbytes = static_cast<uint64_t>(esize);
        bool overflow = false;
        for (const auto& d : v["shape"]) {
            if (!d.is_number_unsigned()) fail(what, where + " has a shape entry that is not a non-negative integer");
            const uint64_t dim = d.get<uint64_t>();
            if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail(what, where + " has a dimension too large");
            if (dim != 0 && nbytes > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
            else nbytes *= dim;
            info.shape.push_back(static_cast<int64_t>(dim));
        }
        for (const auto& o : v["data_offsets"])
            if (!o.is_number_unsigned()) fail(what, where + " has a data offset that is not a non-negative integer");
        info.begin = v["data_offsets"][0].get<uint64_t>();
        info.end = v["data_offsets"][1].get<uint64_t>();
        if (info.end < info.begin) fail(what, where + " has END < BEGIN in data_offsets");
        if (info.end > data_size)
            fail(what, where + " ends at byte " + std::to_string(info.end) + ", past the data section (" +
                           std::to_string(data_size) + " bytes)");
        if (overflow || nbytes != info.end - info.begin)
            fail(what, where + ": dtype " + dt + " and shape need a different byte count than data_offsets give (" +
                           std::to_string(info.end - info.begin) + ")");
        st.infos_.emplace(name, std::move(info));
    }

    // pass 4: ranges sorted by start must tile [0, data_size) exactly
    std::vector<std::pair<std::pair<uint64_t, uint64_t>, const std::string*>> sorted;
    for (const auto& [name, info] : st.infos_) sorted.push_back({{info.begin, info.end}, &name});
    std::sort(sorted.begin(), sorted.end());
    uint64_t at = 0;
    for (const auto& [r, name] : sorted) {
        if (r.first < at) fail(what, "tensor '" + *name + "' overlaps another tensor's bytes");
        if (r.first > at) fail(what, "the data section has a hole before tensor '" + *name + "'");
        at = r.second;
    }
    if (at != data_size)
        fail(what, "the data section has " + std::to_string(data_size - at) + " bytes no tensor owns");
    st.data_start_ = 8 + n;
    st.buf_ = std::move(bytes);
    return st;
}

const SafeTensorInfo& SafeTensors::info(const std::string& name) const {
    auto it = infos_.find(name);
    if (it == infos_.end()) throw InputError(what_ + ": has no tensor '" + name + "'");
    return it->second;
}

std::vector<std::string> SafeTensors::names() const {
    std::vector<std::string> out;
    for (const auto& kv : infos_) out.push_back(kv.first);
    return out;
}

std::string_view SafeTensors::bytes(const std::string& name) const {
    const SafeTensorInfo& i = info(name);
    return std::string_view(buf_.data() + data_start_ + i.begin, static_cast<size_t>(i.end - i.begin));
}

Tensor SafeTensors::to_float(const std::string& name) const {
    const SafeTensorInfo& i = info(name);
    const std::string_view raw = bytes(name);
    Tensor t;
    t.shape = i.shape;
    const size_t n = raw.size() / static_cast<size_t>(dtype_size(i.dtype));
    t.data.resize(n);
    const char* p = raw.data();
    switch (i.dtype) {
        case DType::F32:
            if (n) std::memcpy(t.data.data(), p, n * 4);
            break;
        case DType::F64:
            for (size_t k = 0; k < n; ++k) {
                double d;
                std::memcpy(&d, p + 8 * k, 8);
                t.data[k] = static_cast<float>(d);
            }
            break;
        case DType::F16:
            for (size_t k = 0; k < n; ++k) {
                uint16_t hbits;
                std::memcpy(&hbits, p + 2 * k, 2);
                t.data[k] = half_to_float(hbits);
            }
            break;
        case DType::BF16:
            for (size_t k = 0; k < n; ++k) {
                uint16_t hbits;
                std::memcpy(&hbits, p + 2 * k, 2);
                const uint32_t bits = static_cast<uint32_t>(hbits) << 16;
                std::memcpy(&t.data[k], &bits, 4);
            }
            break;
        default:
            throw InputError(what_ + ": tensor '" + name + "' has dtype " + dtype_name(i.dtype) +
                             ", not a floating-point type");
    }
    return t;
}

Tensor SafeTensors::to_float(const std::string& name, const Shape& expect) const {
    Tensor t = to_float(name);
    if (t.shape != expect)
        throw ShapeError(what_ + ": tensor '" + name + "' has shape " + shape_str(t.shape) + ", expected " +
                         shape_str(expect));
    return t;
}

std::string safetensors_to_string(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
    // pass 1: check names and shapes, sort by name (the data section follows the same order)
    std::vector<const std::pair<std::string, Tensor>*> order;
    order.reserve(tensors.size());
    for (const auto& kv : tensors) {
        if (kv.first.empty()) throw InputError("safetensors: a tensor has an empty name");
        if (kv.first == "__metadata__") throw InputError("safetensors: '__metadata__' is reserved, not a tensor name");
        if (shape_numel(kv.second.shape) != kv.second.numel())
            throw InputError("safetensors: tensor '" + kv.first + "' has shape " + shape_str(kv.second.shape) +
                             " but " + std::to_string(kv.second.numel()) + " values");
        order.push_back(&kv);
    }
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
    for (size_t i = 1; i < order.size(); ++i)
        if (order[i]->first == order[i - 1]->first)
            throw InputError("safetensors: tensor '" + order[i]->first + "' appears twice");
    // pass 2: the header, offsets in name order (nlohmann's object keeps keys sorted too)
    nlohmann::json h = nlohmann::json::object();
    uint64_t off = 0;
    for (const auto* kv : order) {
        const uint64_t nb = static_cast<uint64_t>(kv->second.numel()) * 4;
        h[kv->first] = {{"dtype", "F32"}, {"shape", kv->second.shape}, {"data_offsets", {off, off + nb}}};
        off += nb;
    }
    if (!metadata.empty()) h["__metadata__"] = metadata;
    std::string head = h.dump();
    while (head.size() % 8 != 0) head.push_back(' ');  // 8-byte aligned data, as the format suggests
    // pass 3: length (u64 little-endian), header, data
    std::string out(8, '\0');
    const uint64_t n = head.size();
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    out += head;
    out.reserve(out.size() + off);
    for (const auto* kv : order)  // float32 little-endian: the host order on x86-64 and arm64
        out.append(reinterpret_cast<const char*>(kv->second.data.data()), kv->second.data.size() * 4);
    return out;
}

void check_weight_values(const Tensor& t, std::string_view file, std::string_view name) {
    const auto bad =
        std::find_if(t.data.begin(), t.data.end(), [](float w) { return !(std::fabs(w) <= kMaxWeightMagnitude); });
    if (bad == t.data.end()) return;
    const float w = *bad;
    throw InputError(fmt::format("{}: tensor '{}' holds {}{:g} at flat index {} (weights must be finite, |w| <= {:g})",
                                 file, name, std::isfinite(w) ? "" : "the non-finite value ", w, bad - t.data.begin(),
                                 kMaxWeightMagnitude));
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    write_file_atomic(path, safetensors_to_string(tensors, metadata));
}

}  // namespace attn
