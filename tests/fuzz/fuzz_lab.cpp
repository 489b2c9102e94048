// libFuzzer target: the JSON requests of `attn serve` (app/serve_lab.hpp). The first
// byte picks the request (playground, sqrt(Dk), training run); the rest is the body.
// Contract: the body is refused by parse_lab_body, as the server reads it (bytes that are
// not UTF-8, nesting deeper than 64, or not JSON: a LabError whose answer is printable ASCII
// naming the field), or by a LabError that names a field and says a rule, or it
// is accepted with every value inside the documented bounds; a small accepted
// playground request is also computed and must give weights whose rows sum to 1.
// Anything else (another exception, a crash, a sanitizer report) is a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_file.hpp"  // fail()
#include "serve_lab.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using attn::cli::LabError;
    if (size == 0) return 0;
    const int which = data[0] % 3;
    const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
    nlohmann::json r;
    try {
        r = attn::cli::parse_lab_body(body);  // as the server reads a body: bytes checked, then parsed
    } catch (const LabError& e) {
        // The server's 400: not UTF-8 (naming the key), nested too deep, or not JSON. The answer it
        // sends is ASCII JSON that names the field and carries no raw byte of the request.
        const std::string answer = attn::cli::lab_error_body(e.field, e.what());
        for (const char c : answer)
            if (static_cast<unsigned char>(c) >= 0x80 || static_cast<unsigned char>(c) < 0x20)
                attn::fuzz::fail("a refusal of a body carries a byte that is not printable ASCII");
        if (e.field.empty() || std::string(e.what()).empty()) attn::fuzz::fail("a refusal of a body names no field");
        return 0;
    }
    try {
        if (which == 0) {
            const attn::cli::LabAttentionRequest q = attn::cli::parse_attention_request(r);
            if (q.seq < 1 || q.seq > attn::cli::kLabMaxSeq || q.d_k < 1 || q.d_k > attn::cli::kLabMaxDk ||
                q.heads < 1 || q.heads > attn::cli::kLabMaxHeads || q.keep < 0 || q.keep > q.seq || q.window < 1 ||
                q.window > q.seq || !(q.temperature >= attn::cli::kLabMinTemperature) ||
                !(q.tau >= attn::cli::kLabMinTemperature))
                attn::fuzz::fail("a playground request outside the bounds was accepted");
            if (q.seq <= 16 && q.heads * q.d_k <= 64) {
                const nlohmann::json a = attn::cli::lab_attention(r);
                const double err = a.at("row_sum_error").get<double>();
                if (!(err < 1e-3)) attn::fuzz::fail("an accepted playground request gave rows that do not sum to 1");
            }
        } else if (which == 1) {
            const attn::VarianceConfig c = attn::cli::sqrt_dk_config(r);
            if (c.d_k.size() != 1 || c.d_k[0] < 1 || c.d_k[0] > attn::cli::kLabMaxDkVariance)
                attn::fuzz::fail("a sqrt-dk request outside the bounds was accepted");
        } else {
            const nlohmann::json c = attn::cli::validate_train_request(r);
            const int64_t steps = c.at("steps").get<int64_t>();
            if (steps < 1 || steps > attn::cli::kLabMaxTrainSteps)
                attn::fuzz::fail("a training run out of bounds was accepted");
        }
    } catch (const LabError& e) {
        if (std::string(e.what()).empty()) attn::fuzz::fail("a refusal without a message");
        if (e.status != 400 && e.status != 413) attn::fuzz::fail("a refusal with an unexpected status");
    }
    return 0;
}
