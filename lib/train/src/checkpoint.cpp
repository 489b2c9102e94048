// Checkpoints as safetensors (attn/train/checkpoint.hpp).
#include "attn/train/checkpoint.hpp"

#include <cmath>
#include <string>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/errors.hpp"
#include "attn/io/guards.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/train/tasks.hpp"

namespace attn {

static_assert(kMaxCheckpointWeight == kMaxWeightMagnitude, "one rule for every weight reader (attn/io/guards.hpp)");

namespace {
const char* scale_kind_name(ScaleKind k) {
    switch (k) {
        case ScaleKind::InvSqrtDk: return "sqrt";
        case ScaleKind::None: return "none";
        case ScaleKind::Constant: return "constant";
        case ScaleKind::Cosine: return "cosine";
    }
    return "sqrt";
}
const char* init_kind_name(InitKind k) {
    switch (k) {
        case InitKind::Torch: return "torch";
        case InitKind::XavierUniform: return "xavier_uniform";
        case InitKind::XavierNormal: return "xavier_normal";
        case InitKind::KaimingUniform: return "kaiming_uniform";
        case InitKind::KaimingNormal: return "kaiming_normal";
        case InitKind::Normal: return "normal";
        case InitKind::Zeros: return "zeros";
    }
    return "torch";
}
template <class E, size_t N>
E enum_from(const std::string& s, const std::pair<const char*, E> (&table)[N], const std::string& what,
            const char* field) {
    for (const auto& [name, e] : table)
        if (s == name) return e;
    throw InputError(what + ": config field '" + field + "' has the unknown value '" + s + "'");
}
}  // namespace

std::map<std::string, std::string> training_metadata(const TrainingRecord& r) {
    namespace k = checkpoint_keys;
    return {{k::task, r.task},
            {k::seq, std::to_string(r.seq)},
            {k::symbols, std::to_string(r.symbols)},
            {k::distance, std::to_string(r.distance)},
            {k::queries, std::to_string(r.queries)},
            {k::steps, std::to_string(r.steps)},
            {k::seed, std::to_string(r.seed)},
            {k::eval_loss, fmt::format("{}", r.eval_loss)},
            {k::eval_accuracy, fmt::format("{}", r.eval_accuracy)}};
}

std::optional<int64_t> metadata_size(const std::map<std::string, std::string>& metadata, const char* key) {
    const auto it = metadata.find(key);
    if (it == metadata.end()) return std::nullopt;
    const std::string& v = it->second;
    int64_t x = 0;
    constexpr int64_t kMax = 2147483647;  // a size attn takes anywhere (2^31 - 1)
    const bool digits = !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
    if (digits) x = std::stoll(v);
    if (!digits || x < 1 || x > kMax)
        throw InputError(fmt::format("metadata {} is not a positive integer (at most {}), got '{}'", key, kMax, v));
    return x;
}

std::string config_to_json(const ModelConfig& c) {
    // the file records the standard attention only (pad token and planted bugs are not in it either)
    if (c.attention_variant())
        throw InputError("checkpoint: a model with an attention variant, dropout on the scores or a head mask "
                         "cannot be saved");
    nlohmann::json j = {{"vocab", c.vocab},
                        {"max_seq", c.max_seq},
                        {"d_model", c.d_model},
                        {"heads", c.heads},
                        {"d_k", c.d_k},
                        {"d_v", c.d_v},
                        {"layers", c.layers},
                        {"d_ff", c.d_ff},
                        {"causal", c.causal},
                        {"scale", scale_kind_name(c.scale.kind)},
                        {"scale_value", c.scale.value},
                        {"learn_temperature", c.learn_temperature},
                        {"dropout", c.dropout},
                        {"pos", pos_kind_name(c.pos)},
                        {"act", activation_name(c.act)},
                        {"init", init_kind_name(c.init.kind)},
                        {"init_std", c.init.std},
                        {"qk_init_gain", c.qk_init_gain}};
    if (!c.mlp) j["mlp"] = false;  // written only for an attention-only model: older files stay as they were
    return j.dump();
}

ModelConfig config_from_json(const std::string& text, const std::string& what) {
    nlohmann::json j;
    // nested past kMaxJsonDepth: refused before parsing (printing such a value recurses once a level)
    check_json_depth(text, what + ": metadata attn.config");
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        throw InputError(what + ": the model config is not valid JSON");
    }
    if (!j.is_object()) throw InputError(what + ": the model config is not a JSON object");
    auto get = [&](const char* field) -> const nlohmann::json& {
        if (!j.contains(field)) throw InputError(what + ": the model config has no '" + field + "'");
        return j.at(field);
    };
    // every key is one config_to_json writes: an unknown one would be silently ignored
    static const std::set<std::string> known = {"vocab", "max_seq", "d_model", "heads", "d_k", "d_v",
                                                "layers", "d_ff", "causal", "scale", "scale_value",
                                                "learn_temperature", "dropout", "pos", "act", "init",
                                                "init_std", "qk_init_gain", "mlp"};
    for (const auto& [key, value] : j.items())
        if (!known.count(key))
            throw InputError(what + ": the model config has the unknown field '" + key + "' (attn writes only " +
                             "vocab, max_seq, d_model, heads, d_k, d_v, layers, d_ff, causal, scale, scale_value, " +
                             "learn_temperature, dropout, pos, act, init, init_std, qk_init_gain, mlp)");
    // a size: a JSON integer in [0, 2^62], never a float or a huge value cast to int64
    auto size = [&](const char* field) -> int64_t {
        const nlohmann::json& v = get(field);
        if (!v.is_number_integer() || v.get<double>() < 0 || v.get<double>() > 4.6e18)
            throw InputError(what + ": config field '" + field + "' must be a non-negative integer, got " + v.dump());
        return v.get<int64_t>();
    };
    ModelConfig c;
    try {
        c.vocab = size("vocab");
        c.max_seq = size("max_seq");
        c.d_model = size("d_model");
        c.heads = size("heads");
        c.d_k = size("d_k");
        c.d_v = size("d_v");
        c.layers = size("layers");
        c.d_ff = size("d_ff");
        c.causal = get("causal").get<bool>();
        static const std::pair<const char*, ScaleKind> scales[] = {
            {"sqrt", ScaleKind::InvSqrtDk}, {"none", ScaleKind::None}, {"constant", ScaleKind::Constant},
            {"cosine", ScaleKind::Cosine}};
        c.scale.kind = enum_from(get("scale").get<std::string>(), scales, what, "scale");
        c.scale.value = get("scale_value").get<float>();
        // absent in checkpoints written before the learned temperature existed: fixed
        c.learn_temperature = j.contains("learn_temperature") && j.at("learn_temperature").get<bool>();
        c.dropout = get("dropout").get<float>();
        static const std::pair<const char*, PosKind> poss[] = {{"learned", PosKind::Learned},
                                                                {"sinusoidal", PosKind::Sinusoidal},
                                                                {"none", PosKind::None}};
        c.pos = enum_from(get("pos").get<std::string>(), poss, what, "pos");
        static const std::pair<const char*, Activation> acts[] = {{"gelu", Activation::Gelu},
                                                                   {"relu", Activation::Relu}};
        c.act = enum_from(get("act").get<std::string>(), acts, what, "act");
        static const std::pair<const char*, InitKind> inits[] = {
            {"torch", InitKind::Torch},           {"xavier_uniform", InitKind::XavierUniform},
            {"xavier_normal", InitKind::XavierNormal}, {"kaiming_uniform", InitKind::KaimingUniform},
            {"kaiming_normal", InitKind::KaimingNormal}, {"normal", InitKind::Normal}, {"zeros", InitKind::Zeros}};
        c.init.kind = enum_from(get("init").get<std::string>(), inits, what, "init");
        c.init.std = get("init_std").get<float>();
        c.qk_init_gain = get("qk_init_gain").get<float>();
        c.mlp = !j.contains("mlp") || j.at("mlp").get<bool>();  // absent: a model with MLPs
    } catch (const nlohmann::json::exception&) {
        throw InputError(what + ": a model config field has the wrong type");
    }
    try {
        c.validate();
    } catch (const InputError& e) {
        throw InputError(what + ": model config: " + e.what());
    }
    // the position table is max_seq x d_model whatever the file holds (sinusoidal positions are
    // computed): bounded by the longest sequence a task has, so a corrupt max_seq cannot allocate gigabytes
    if (c.max_seq > kMaxTaskSeq)
        throw InputError(what + ": model config: max_seq must be at most " + std::to_string(kMaxTaskSeq) +
                         " (the longest sequence of attn's tasks), got " + std::to_string(c.max_seq));
    return c;
}

void save_checkpoint(const std::string& path, TrainableStack& model, const std::map<std::string, std::string>& extra) {
    std::map<std::string, std::string> meta = extra;
    meta["format"] = "attn-tiny-transformer";
    meta["attn.config"] = config_to_json(model.config());
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const auto& p : model.params()) tensors.emplace_back(p.name, *p.value);
    save_safetensors(path, tensors, meta);
}

Checkpoint load_checkpoint(const std::string& path) {
    const SafeTensors st = SafeTensors::load(path);
    const auto& meta = st.metadata();
    const auto it = meta.find("attn.config");
    if (it == meta.end())
        throw InputError(path + ": not an attn checkpoint (no 'attn.config' in the safetensors metadata)");
    const ModelConfig cfg = config_from_json(it->second, path);
    // every tensor checked against the config before the model is allocated
    const auto shapes = param_shapes(cfg);
    std::set<std::string> expected;
    for (const auto& [name, shape] : shapes) {
        expected.insert(name);
        if (!st.has(name))
            throw InputError(path + ": tensor '" + name + "' is missing (the config needs shape " + shape_str(shape) +
                             ")");
        const SafeTensorInfo& info = st.info(name);
        if (info.dtype != DType::F32)
            throw InputError(path + ": tensor '" + name + "' has dtype " + dtype_name(info.dtype) + ", not F32");
        if (info.shape != shape)
            throw InputError(path + ": tensor '" + name + "' has shape " + shape_str(info.shape) +
                             ", the config needs " + shape_str(shape));
    }
    for (const auto& n : st.names())
        if (!expected.count(n))
            throw InputError(path + ": tensor '" + n + "' is not part of the model its config describes");
    Checkpoint ck{TrainableStack(cfg), meta};
    for (auto& p : ck.model.params()) {
        *p.value = st.to_float(p.name, p.value->shape);
        // a NaN, an infinity or an absurd weight makes every loss NaN (or overflows the next step): refused here
        check_weight_values(*p.value, path, p.name);
    }
    return ck;
}

}  // namespace attn
