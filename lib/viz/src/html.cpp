// The self-contained attention page (attn/viz/html.hpp): data encoding, the
// escaping that keeps every string text, the CSP hashes, and the document.
// The page's CSS and script are html_page.css and html_page.js (html_assets.hpp).
#include "attn/viz/html.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "attn/core/utf8.hpp"
#include "html_assets.hpp"

namespace attn {
namespace {

std::string num(double x) {
    if (!std::isfinite(x)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    return buf;
}

// ---- SHA-256 (FIPS 180-4), for the CSP hashes of the inline script and style
std::array<uint8_t, 32> sha256(std::string_view msg) {
    static constexpr uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    auto rotr = [](uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
    // the message, a 1 bit, zeros, and the bit length (big-endian) to a multiple of 64 bytes
    std::string m(msg);
    const uint64_t bits = static_cast<uint64_t>(msg.size()) * 8;
    m.push_back(static_cast<char>(0x80));
    while (m.size() % 64 != 56) m.push_back('\0');
    for (int i = 7; i >= 0; --i) m.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    for (size_t block = 0; block < m.size(); block += 64) {
        uint32_t w[64];
        for (int i = 0; i < 16; ++i) {
            const auto* p = reinterpret_cast<const unsigned char*>(m.data() + block + 4 * i);
            w[i] = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
        }
        for (int i = 16; i < 64; ++i) {
            const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int i = 0; i < 64; ++i) {
            const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
            const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            hh = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
    }
    std::array<uint8_t, 32> out{};
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) out[static_cast<size_t>(4 * i + j)] = static_cast<uint8_t>(h[i] >> (24 - 8 * j));
    return out;
}

std::string tokens_json(const std::vector<std::string>& tokens) {
    std::string s = "[";
    for (size_t i = 0; i < tokens.size(); ++i) s += (i ? "," : "") + html_json_string(tokens[i]);
    return s + "]";
}

std::string f16_base64(const std::vector<float>& v) {
    std::vector<uint8_t> bytes(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
        const uint16_t h = float_to_half(v[i]);
        bytes[2 * i] = static_cast<uint8_t>(h & 0xff);
        bytes[2 * i + 1] = static_cast<uint8_t>(h >> 8);
    }
    return base64_encode(bytes.data(), bytes.size());
}

// One base64 string of float16 per run of `per` values (a head's [Tq, Tk]).
std::vector<std::string> f16_heads_base64(const std::vector<float>& v, size_t per) {
    std::vector<std::string> out;
    std::vector<float> head(per);
    for (size_t at = 0; at < v.size(); at += per) {
        std::copy(v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + per),
                  head.begin());
        out.push_back(f16_base64(head));
    }
    return out;
}

// A weight in 8 bits on a square-root scale: q = round(sqrt(w) * 255), w clamped to [0, 1].
uint8_t sqrt_u8(double w) {
    return static_cast<uint8_t>(std::lround(std::sqrt(std::clamp(w, 0.0, 1.0)) * 255.0));
}

// The model view's thumbnails, computed here so the page draws every head without decoding its weights:
// each head max-pooled to at most R x R cells (a cell shows the largest weight it covers, so a sharp
// head stays visible), 8-bit square-root scale. R keeps all thumbnails within 160 kB (MiniLM's
// 6 x 12 heads at T = 128 get 47 x 47, 12 x 12 heads 33 x 33), 24..64.
struct Thumbs {
    int64_t w = 0, h = 0;
    std::vector<uint8_t> q;  // [L * H, h, w]
};
Thumbs thumbnails(const AttentionPage& p) {
    const int64_t heads = p.batches * p.layers * p.heads, Tq = p.tq, Tk = p.tk;
    const auto r = static_cast<int64_t>(std::sqrt(163840.0 / static_cast<double>(heads)));
    const int64_t R = std::clamp<int64_t>(r, 24, 64);
    Thumbs t;
    t.w = std::min(R, Tk), t.h = std::min(R, Tq);
    t.q.resize(static_cast<size_t>(heads * t.w * t.h));
    for (int64_t k = 0; k < heads; ++k) {
        const float* w = p.weights.data() + k * Tq * Tk;
        uint8_t* out = t.q.data() + k * t.w * t.h;
        for (int64_t y = 0; y < t.h; ++y) {
            const int64_t i0 = y * Tq / t.h, i1 = std::max(i0 + 1, (y + 1) * Tq / t.h);
            for (int64_t x = 0; x < t.w; ++x) {
                const int64_t j0 = x * Tk / t.w, j1 = std::max(j0 + 1, (x + 1) * Tk / t.w);
                float m = 0;
                for (int64_t i = i0; i < i1; ++i)
                    for (int64_t j = j0; j < j1; ++j) m = std::max(m, w[i * Tk + j]);
                out[y * t.w + x] = sqrt_u8(m);
            }
        }
    }
    return t;
}

}  // namespace

std::string base64_encode(const uint8_t* data, size_t n) {
    static constexpr char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    for (size_t i = 0; i < n; i += 3) {
        const uint32_t a = data[i], b = i + 1 < n ? data[i + 1] : 0, c = i + 2 < n ? data[i + 2] : 0;
        const uint32_t x = (a << 16) | (b << 8) | c;
        out.push_back(tbl[(x >> 18) & 63]);
        out.push_back(tbl[(x >> 12) & 63]);
        out.push_back(i + 1 < n ? tbl[(x >> 6) & 63] : '=');
        out.push_back(i + 2 < n ? tbl[x & 63] : '=');
    }
    return out;
}

std::string sha256_base64(std::string_view data) {
    const auto d = sha256(data);
    return base64_encode(d.data(), d.size());
}

uint16_t float_to_half(float f) {
    uint32_t x = 0;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    const int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (e <= 0) {  // a half subnormal, or zero
        if (e < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        const int shift = 14 - e;
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return static_cast<uint16_t>(sign | h);
    }
    uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent rounds up correctly
    return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
    const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    float out = 0;
    if (exp == 0) {
        out = std::ldexp(static_cast<float>(mant), -24);
        return sign ? -out : out;
    }
    uint32_t x = 0;
    if (exp == 31) x = sign | 0x7f800000u | (mant << 13);
    else x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    std::memcpy(&out, &x, 4);
    return out;
}

std::string html_json_string(std::string_view s) {
    std::string out = "\"";
    char buf[8];
    for (size_t i = 0; i < s.size();) {
        const char32_t c = utf8_next(s, i);
        if (c == U'"') out += "\\\"";
        else if (c == U'\\') out += "\\\\";
        else if (c < 0x20 || c == U'<' || c == U'>' || c == U'&' || c == U'\'' || c == 0x2028 || c == 0x2029 ||
                 (c >= 0x7f && c < 0xa0)) {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
        } else {
            utf8_append(out, c);
        }
    }
    return out + "\"";
}

std::vector<HtmlHeadFigures> html_head_figures(const AttentionPage& p) {
    // (mh: the mask's heads per batch row, 1 or H; 0 without a mask)
    const int64_t Tq = p.tq, Tk = p.tk, B = std::max<int64_t>(1, p.batches);
    const int64_t mh = p.allowed.empty() ? 0 : static_cast<int64_t>(p.allowed.size()) / (B * Tq * Tk);
    std::vector<HtmlHeadFigures> out;
    std::vector<double> received(static_cast<size_t>(Tk));
    for (int64_t l = 0; l < B * p.layers; ++l)  // (batch row l / layers)
        for (int64_t h = 0; h < p.heads; ++h) {
            const float* w = p.weights.data() + (l * p.heads + h) * Tq * Tk;
            const uint8_t* a =
                mh == 0 ? nullptr : p.allowed.data() + ((l / p.layers) * mh + (mh == 1 ? 0 : h)) * Tq * Tk;
            std::fill(received.begin(), received.end(), 0.0);
            double ent = 0;
            int64_t ent_rows = 0, rows = 0;
            for (int64_t i = 0; i < Tq; ++i) {
                int64_t n = 0;
                double hrow = 0;
                for (int64_t j = 0; j < Tk; ++j) {
                    if (a != nullptr && a[i * Tk + j] == 0) continue;
                    ++n;
                    const double x = w[i * Tk + j];
                    if (x > 0) hrow -= x * std::log(x);
                    received[static_cast<size_t>(j)] += x;
                }
                if (n >= 1) ++rows;
                if (n >= 2) {
                    ent += hrow / std::log(static_cast<double>(n));
                    ++ent_rows;
                }
            }
            HtmlHeadFigures f;
            f.entropy = ent_rows > 0 ? ent / static_cast<double>(ent_rows) : 0.0;
            const auto top = std::max_element(received.begin(), received.end());
            f.sink_key = top - received.begin();
            f.sink_share = rows > 0 && top != received.end() ? *top / static_cast<double>(rows) : 0.0;
            out.push_back(f);
        }
    return out;
}

std::string attention_html_script_source() { return "'sha256-" + sha256_base64(kHtmlJs) + "'"; }
std::string attention_html_style_source() { return "'sha256-" + sha256_base64(kHtmlCss) + "'"; }

namespace {

// std::invalid_argument unless every vector of the page has the size its counts say.
void check_page_sizes(const AttentionPage& p) {
    if (p.batches < 1) throw std::invalid_argument("attention_html: batches must be >= 1");
    const int64_t L = p.layers * p.batches, H = p.heads, Tq = p.tq, Tk = p.tk, B = p.batches;  // (L: every row's)
    if (p.layers < 1 || H < 1 || Tq < 1 || Tk < 1)
        throw std::invalid_argument("attention_html: layers, heads, Tq, Tk must be >= 1");
    const auto n = static_cast<size_t>(L * H * Tq * Tk);
    if (p.weights.size() != n) throw std::invalid_argument("attention_html: weights must be [L, H, Tq, Tk]");
    if (!p.scores.empty() && p.scores.size() != n)
        throw std::invalid_argument("attention_html: scores must be [L, H, Tq, Tk]");
    if (!p.allowed.empty() && p.allowed.size() != static_cast<size_t>(B * Tq * Tk) &&
        p.allowed.size() != static_cast<size_t>(B * H * Tq * Tk))
        throw std::invalid_argument("attention_html: allowed must be [B, Tq, Tk] or [B, H, Tq, Tk]");
    if (!p.value_norms.empty() && p.value_norms.size() != static_cast<size_t>(L * H * Tk))
        throw std::invalid_argument("attention_html: value_norms must be [L, H, Tk]");
    if (!p.head_notes.empty() && p.head_notes.size() != static_cast<size_t>(L * H))
        throw std::invalid_argument("attention_html: head_notes must hold L * H strings");
    if ((!p.q_tokens.empty() && p.q_tokens.size() != static_cast<size_t>(Tq)) ||
        (!p.k_tokens.empty() && p.k_tokens.size() != static_cast<size_t>(Tk)))
        throw std::invalid_argument("attention_html: q_tokens must be [Tq], k_tokens [Tk]");
}

}  // namespace

std::string attention_html(const AttentionPage& p, HtmlStats* stats) {
    check_page_sizes(p);
    const int64_t L = p.layers * p.batches, H = p.heads, Tq = p.tq, Tk = p.tk;  // (L: every batch row's layers)
    const auto n = static_cast<size_t>(L * H * Tq * Tk);

    // ---- the weights: float16 for small pages, else 8 bits on a square-root scale; the error measured.
    // Each head's bytes go to their own data element (heads_b64), so the page decodes a head only when it
    // shows it.
    HtmlStats st;
    std::vector<std::string> w64;
    const auto per = static_cast<size_t>(Tq * Tk);
    if (static_cast<int64_t>(n) <= kHtmlF16Values) {
        st.encoding = "float16";
        for (float x : p.weights)
            st.max_weight_error = std::max(st.max_weight_error, std::fabs(double(half_to_float(float_to_half(x))) - x));
        w64 = f16_heads_base64(p.weights, per);
    } else {
        st.encoding = "8-bit sqrt";
        std::vector<uint8_t> q(n);
        for (size_t i = 0; i < n; ++i) {
            q[i] = sqrt_u8(p.weights[i]);
            const double back = (q[i] / 255.0) * (q[i] / 255.0);
            st.max_weight_error = std::max(st.max_weight_error, std::fabs(back - double(p.weights[i])));
        }
        for (size_t k = 0; k < n / per; ++k) w64.push_back(base64_encode(q.data() + k * per, per));
    }
    st.scores_embedded = !p.scores.empty() && static_cast<int64_t>(n) <= kHtmlScoreValues;

    // ---- the data block: JSON, every string through html_json_string
    std::string data = "{";
    data += "\"title\":" + html_json_string(p.title);
    data += ",\"subtitle\":" + html_json_string(p.subtitle);
    data += ",\"source\":" + html_json_string(p.source);
    data += ",\"lang\":" + html_json_string(p.lang == "zh" ? "zh" : "en");
    data += ",\"B\":" + std::to_string(p.batches) + ",\"L\":" + std::to_string(p.layers);
    data += ",\"H\":" + std::to_string(H) + ",\"Tq\":" + std::to_string(Tq) + ",\"Tk\":" + std::to_string(Tk);
    data += ",\"q\":" + tokens_json(p.q_tokens) + ",\"k\":" + tokens_json(p.k_tokens);
    data += ",\"enc\":\"" + std::string(st.encoding == "float16" ? "f16" : "u8s") + "\",\"maxerr\":" +
            num(st.max_weight_error);
    data += ",\"scores\":" + std::string(st.scores_embedded ? "true" : "false");
    // scores the command computed but left out for the page's size (the hover says which)
    data += ",\"scores_left_out\":" + std::string(!p.scores.empty() && !st.scores_embedded ? "true" : "false");
    const Thumbs th = thumbnails(p);
    data += ",\"thumb\":{\"w\":" + std::to_string(th.w) + ",\"h\":" + std::to_string(th.h) + ",\"d\":\"" +
            base64_encode(th.q.data(), th.q.size()) + "\"}";
    bool any_masked = false;
    for (uint8_t a : p.allowed) any_masked = any_masked || a == 0;
    if (any_masked) {
        std::vector<uint8_t> bits((p.allowed.size() + 7) / 8, 0);
        for (size_t i = 0; i < p.allowed.size(); ++i)
            if (p.allowed[i] != 0) bits[i / 8] = static_cast<uint8_t>(bits[i / 8] | (1u << (i % 8)));
        const auto mask_heads = p.allowed.size() / static_cast<size_t>(p.batches * Tq * Tk);
        data += ",\"mask\":{\"heads\":" + std::to_string(mask_heads) +
                ",\"bits\":\"" + base64_encode(bits.data(), bits.size()) + "\"}";
    } else {
        data += ",\"mask\":null";
    }
    data += ",\"vn\":" + (p.value_norms.empty() ? std::string("null") : "\"" + f16_base64(p.value_norms) + "\"");
    data += ",\"notes\":" + tokens_json(p.head_notes);
    data += ",\"figs\":[";
    const auto figs = html_head_figures(p);
    for (size_t i = 0; i < figs.size(); ++i)
        data += (i ? ",[" : "[") + num(figs[i].entropy) + "," + num(figs[i].sink_share) + "," +
                std::to_string(figs[i].sink_key) + "]";
    data += "],\"shapes\":[";
    for (size_t i = 0; i < p.shapes.size(); ++i)
        data += (i ? ",[" : "[") + html_json_string(p.shapes[i].first) + "," +
                html_json_string(p.shapes[i].second) + "]";
    data += "]}";

    // ---- the document: CSP first, then style and script allowed by their hashes only
    const std::string_view css = kHtmlCss, js = kHtmlJs;
    const std::string csp = "default-src 'none'; script-src 'sha256-" + sha256_base64(js) + "'; style-src 'sha256-" +
                            sha256_base64(css) + "'; img-src 'none'; connect-src 'none'; font-src 'none'; "
                            "media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; "
                            "form-action 'none'; base-uri 'none'";
    std::string html;
    size_t data_bytes = data.size();
    for (const auto& h : w64) data_bytes += h.size() + 64;
    html.reserve(data_bytes * (st.scores_embedded ? 2 : 1) + css.size() + js.size() + 2048);
    html += "<!DOCTYPE html>\n<html lang=\"";
    html += p.lang == "zh" ? "zh-Hans" : "en";
    html += "\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"";
    html += csp;
    html += "\">\n<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>attn</title>\n<style>";
    html += css;
    html += "</style>\n</head>\n<body>\n<noscript>This page draws its views with JavaScript.</noscript>\n"
            "<script type=\"application/json\" id=\"attn-data\">";
    html += data;
    html += "</script>\n<script>";
    html += js;
    html += "</script>\n";
    // one data element per head: weights, and the scores when embedded (base64 only: nothing to escape).
    // They come after the script, so the model view (drawn from the thumbnails in the data block) shows
    // while a big page is still loading; the script waits for them before it draws a head.
    auto blocks = [&html](const char* name, const std::vector<std::string>& heads) {
        for (size_t k = 0; k < heads.size(); ++k) {
            html += "<script type=\"application/octet-stream\" id=\"attn-";
            html += name;
            html += "-" + std::to_string(k) + "\">" + heads[k] + "</script>\n";
        }
    };
    blocks("w", w64);
    if (st.scores_embedded) blocks("s", f16_heads_base64(p.scores, per));
    html += "</body>\n</html>\n";
    st.bytes = static_cast<int64_t>(html.size());
    if (stats != nullptr) *stats = st;
    return html;
}

}  // namespace attn
