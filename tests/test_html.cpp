// The self-contained attention page (attn/viz/html.hpp) and --html FILE on
// `attn view` and `attn forward`: the encodings it relies on (SHA-256 for the
// CSP hashes, float16, base64, the JSON escaping that keeps strings text), the
// page's safety (no markup from a token, no network, script and style only by
// hash), its size at MiniLM's 6 x 12 heads, T = 128, and the stated error of
// the embedded weights, decoded back here as the page's script decodes them.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attn/attn.hpp"
#include "attn/viz/html.hpp"
#include "test_util.hpp"

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

std::vector<uint8_t> base64_decode(const std::string& s) {
    auto val = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
    };
    std::vector<uint8_t> out;
    uint32_t acc = 0;
    int bits = 0;
    for (char c : s) {
        const int v = val(c);
        if (v < 0) break;  // '=' padding
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
        }
    }
    return out;
}

// The text between the first `open` and the `close` after it.
std::string between(const std::string& s, const std::string& open, const std::string& close) {
    const size_t a = s.find(open);
    if (a == std::string::npos) return {};
    const size_t b = s.find(close, a + open.size());
    return b == std::string::npos ? std::string() : s.substr(a + open.size(), b - a - open.size());
}

// The JSON data block of a page, parsed.
nlohmann::json page_data(const std::string& html) {
    return nlohmann::json::parse(between(html, "<script type=\"application/json\" id=\"attn-data\">", "</script>"));
}

// The bytes of every head's data element of one kind ("w" weights, "s" scores), in head order.
std::vector<uint8_t> page_blocks(const std::string& html, const char* kind, int64_t heads) {
    std::vector<uint8_t> out;
    for (int64_t k = 0; k < heads; ++k) {
        const std::string open = "<script type=\"application/octet-stream\" id=\"attn-" + std::string(kind) + "-" +
                                 std::to_string(k) + "\">";
        REQUIRE_MESSAGE(html.find(open) != std::string::npos, open);
        const auto b = base64_decode(between(html, open, "</script>"));
        out.insert(out.end(), b.begin(), b.end());
    }
    return out;
}

// Softmax rows of random scores: [L, H, T, T], with the causal mask's zeros when causal.
attn::AttentionPage random_page(int64_t L, int64_t H, int64_t T, bool causal, uint64_t seed) {
    attn::AttentionPage p;
    p.layers = L, p.heads = H, p.tq = p.tk = T;
    p.weights.resize(static_cast<size_t>(L * H * T * T));
    attn::Rng r(seed, 0);
    for (int64_t row = 0; row < L * H * T; ++row) {
        const int64_t i = row % T, n = causal ? i + 1 : T;
        float* w = p.weights.data() + row * T;
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += (w[j] = std::exp(2.0f * r.normal()));
        for (int64_t j = 0; j < n; ++j) w[j] = static_cast<float>(w[j] / sum);
    }
    if (causal) {
        p.allowed.resize(static_cast<size_t>(T * T));
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j) p.allowed[static_cast<size_t>(i * T + j)] = j <= i;
    }
    return p;
}

}  // namespace

TEST_CASE("html: SHA-256 and base64 give the FIPS 180-2 test vectors (the CSP hashes)") {
    CHECK(attn::sha256_base64("abc") == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
    CHECK(attn::sha256_base64("") == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
    // two blocks: 56 bytes of message push the length into a second block
    CHECK(attn::sha256_base64("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "JI1qYdIGOLjlwCaTDD5gOaM85Flk/yFn9uzt1BnbBsE=");
    const uint8_t b[] = {'M', 'a', 'n', 'M', 'a'};
    CHECK(attn::base64_encode(b, 3) == "TWFu");
    CHECK(attn::base64_encode(b, 5) == "TWFuTWE=");
    CHECK(attn::base64_encode(b, 4) == "TWFuTQ==");
}

TEST_CASE("html: float16 rounds to nearest even and keeps zeros, subnormals and infinities") {
    CHECK(attn::float_to_half(1.0f) == 0x3c00);
    CHECK(attn::float_to_half(-2.0f) == 0xc000);
    CHECK(attn::float_to_half(65504.0f) == 0x7bff);
    CHECK(attn::float_to_half(65520.0f) == 0x7c00);  // rounds past the largest half: infinity
    CHECK(attn::float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
    CHECK(attn::float_to_half(std::ldexp(1.0f, -24)) == 0x0001);  // the smallest subnormal
    CHECK(attn::float_to_half(std::ldexp(1.0f, -26)) == 0x0000);  // under half of it
    CHECK(attn::float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // a tie: to even
    CHECK(attn::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // a tie: to even, up
    // every weight in [0, 1] comes back within half an ulp: 2^-11 relative, or 2^-25 absolute among subnormals
    attn::Rng r(7, 0);
    for (int k = 0; k < 10000; ++k) {
        const float x = r.uniform() * (k % 2 ? 1.0f : 1e-4f);
        const float y = attn::half_to_float(attn::float_to_half(x));
        CHECK(std::fabs(double(y) - x) <= std::max(std::ldexp(double(x), -11), std::ldexp(1.0, -25)));
    }
    CHECK(std::isinf(attn::half_to_float(0xfc00)));
}

TEST_CASE("html: strings become JSON that cannot close the script or open markup") {
    using attn::html_json_string;
    CHECK(html_json_string("plain") == "\"plain\"");
    CHECK(html_json_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
    CHECK(html_json_string("</script><img src=x onerror=alert(1)>") ==
          "\"\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e\"");
    CHECK(html_json_string("&'\n") == "\"\\u0026\\u0027\\u000a\"");
    CHECK(html_json_string("\xe2\x80\xa8") == "\"\\u2028\"");  // a line separator ends a JS string literal
    CHECK(html_json_string("caf\xc3\xa9 \xe4\xb8\xad") == "\"caf\xc3\xa9 \xe4\xb8\xad\"");  // UTF-8 kept as is
    CHECK(html_json_string("\xff") == "\"\xef\xbf\xbd\"");  // not UTF-8: U+FFFD
    // and the JSON parses back to the same text
    const std::string probe = "</script><!-- \"x\" & <b>";
    CHECK(nlohmann::json::parse(html_json_string(probe)).get<std::string>() == probe);
}

TEST_CASE("html: a token of markup reaches the page as text, and the page makes no request") {
    attn::AttentionPage p = random_page(1, 2, 4, true, 1);
    p.q_tokens = p.k_tokens = {"<img src=x onerror=alert(1)>", "</script>", "<!--", "a&b"};
    p.title = "<script>alert(2)</script>";
    p.subtitle = "</style><b>bold</b>";
    p.source = "\"><svg onload=alert(3)>";
    p.head_notes = {"<i>note</i>", "</script>"};
    const std::string html = attn::attention_html(p);

    // no markup from the strings: none of their tags appears, and exactly two scripts close
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("<svg") == std::string::npos);
    CHECK(html.find("<b>") == std::string::npos);
    CHECK(html.find("<i>") == std::string::npos);
    // two scripts close: the JSON data block and the page's script; the rest are the heads' base64 blocks
    CHECK(count(html, "</script>") == 2 + 2);
    CHECK(count(html, "<script") == 2 + 2);
    CHECK(count(html, "<script type=\"application/octet-stream\" id=\"attn-w-") == 2);
    // the heads' blocks follow the page's script, so the model view draws before a big page has loaded
    CHECK(html.find("<script>") < html.find("id=\"attn-w-0\""));
    CHECK(count(html, "</style>") == 1);
    CHECK(html.find("<!--") == std::string::npos);
    // the strings come back whole from the data block
    const auto data = page_data(html);
    CHECK(data["q"][0] == "<img src=x onerror=alert(1)>");
    CHECK(data["q"][1] == "</script>");
    CHECK(data["title"] == p.title);
    CHECK(data["source"] == p.source);
    CHECK(data["notes"][1] == "</script>");
    // the script never parses markup: no innerHTML, outerHTML, insertAdjacentHTML, document.write, eval
    const std::string js = between(html, "</script>\n<script>", "</script>");
    REQUIRE(!js.empty());
    for (const char* bad : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function(",
                            "fetch(", "XMLHttpRequest", "WebSocket", "EventSource", "sendBeacon", "import("})
        CHECK_MESSAGE(js.find(bad) == std::string::npos, bad);
    // no address of any kind, and a CSP that forbids every fetch and admits the script and style by hash only
    CHECK(html.find("://") == std::string::npos);
    const std::string csp = between(html, "http-equiv=\"Content-Security-Policy\" content=\"", "\"");
    CHECK(csp.starts_with("default-src 'none';"));
    CHECK(csp.find("unsafe") == std::string::npos);
    CHECK(csp.find("connect-src 'none'") != std::string::npos);
    CHECK(csp.find("script-src 'sha256-" + attn::sha256_base64(js) + "'") != std::string::npos);
    const std::string css = between(html, "<style>", "</style>");
    CHECK(csp.find("style-src 'sha256-" + attn::sha256_base64(css) + "'") != std::string::npos);
    // the CSP comes before the style and the script
    CHECK(html.find("Content-Security-Policy") < html.find("<style>"));
}

TEST_CASE("html: the embedded weights decode within the error the page states") {
    SUBCASE("small: float16") {
        const attn::AttentionPage p = random_page(2, 3, 6, true, 2);
        attn::HtmlStats st;
        const auto data = page_data(attn::attention_html(p, &st));
        CHECK(st.encoding == "float16");
        CHECK(data["enc"] == "f16");
        const auto b = page_blocks(attn::attention_html(p), "w", 2 * 3);
        REQUIRE(b.size() == 2 * p.weights.size());
        double err = 0;
        for (size_t i = 0; i < p.weights.size(); ++i)
            err = std::max(err, std::fabs(double(attn::half_to_float(uint16_t(b[2 * i] | (b[2 * i + 1] << 8)))) -
                                          p.weights[i]));
        CHECK(err == doctest::Approx(st.max_weight_error).epsilon(1e-6));
        CHECK(err <= std::ldexp(1.0, -12));  // half an ulp of 1
        CHECK(data["maxerr"].get<double>() == doctest::Approx(err).epsilon(1e-5));
        // the causal mask, bit-packed: row 0 sees key 0 only
        REQUIRE(data["mask"].is_object());
        const auto m = base64_decode(data["mask"]["bits"].get<std::string>());
        CHECK((m[0] & 0x3f) == 0x01);
    }
    SUBCASE("MiniLM's size, 6 x 12 heads at T = 128: 8 bits, under 2 MB") {
        const attn::AttentionPage p = random_page(6, 12, 128, false, 3);
        attn::HtmlStats st;
        const std::string html = attn::attention_html(p, &st);
        CHECK(st.encoding == "8-bit sqrt");
        CHECK(html.size() < 2'000'000);
        CHECK(st.bytes == static_cast<int64_t>(html.size()));
        const auto data = page_data(html);
        const auto b = page_blocks(html, "w", 6 * 12);
        REQUIRE(b.size() == p.weights.size());
        double err = 0;
        for (size_t i = 0; i < b.size(); ++i) {
            const double back = (b[i] / 255.0) * (b[i] / 255.0);
            err = std::max(err, std::fabs(back - p.weights[i]));
        }
        CHECK(err == doctest::Approx(st.max_weight_error).epsilon(1e-6));
        CHECK(err <= 1.0 / 255.0);  // |d(q^2)| <= (2q + 1) / 255^2 / 2 at q <= 255
        CHECK(data["figs"].size() == 72);
        CHECK(data["thumb"]["w"] == 47);
    }
}

TEST_CASE("html: the model view's thumbnails keep each head's largest weight, per head") {
    // 2 heads at T = 200, pooled to 64 x 64 cells (3 or 4 rows and keys each): head 1 puts weight 1 on key 150
    // for query 100 and nothing elsewhere, head 0 is uniform
    attn::AttentionPage p;
    p.heads = 2, p.tq = p.tk = 200;
    p.weights.assign(2 * 200 * 200, 1.0f / 200);
    std::fill(p.weights.begin() + 200 * 200, p.weights.end(), 0.0f);
    p.weights[200 * 200 + 100 * 200 + 150] = 1.0f;
    const auto data = page_data(attn::attention_html(p));
    REQUIRE(data["thumb"]["w"] == 64);
    REQUIRE(data["thumb"]["h"] == 64);
    const auto q = base64_decode(data["thumb"]["d"].get<std::string>());
    REQUIRE(q.size() == 2 * 64 * 64);
    // head 0: sqrt(1/200) everywhere; head 1: 255 in the cell that covers (100, 150), 0 elsewhere
    const auto uniform = static_cast<uint8_t>(std::lround(std::sqrt(1.0 / 200) * 255));
    for (size_t c = 0; c < 64 * 64; ++c) CHECK(q[c] == uniform);
    const size_t y = 100 * 64 / 200, x = 150 * 64 / 200, hot = 64 * 64 + y * 64 + x;
    CHECK(q[hot] == 255);
    size_t lit = 0;
    for (size_t c = 64 * 64; c < q.size(); ++c) lit += q[c] != 0;
    CHECK(lit == 1);
}

TEST_CASE("html: each head's entropy and sink share") {
    attn::AttentionPage p;
    p.tq = p.tk = 4;
    p.heads = 2;
    // head 0: uniform rows (entropy 1, every key 1/4); head 1: every row on key 2 (entropy 0, sink 1)
    for (int i = 0; i < 16; ++i) p.weights.push_back(0.25f);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) p.weights.push_back(j == 2 ? 1.0f : 0.0f);
    const auto f = attn::html_head_figures(p);
    REQUIRE(f.size() == 2);
    CHECK(f[0].entropy == doctest::Approx(1.0));
    CHECK(f[0].sink_share == doctest::Approx(0.25));
    CHECK(f[1].entropy == doctest::Approx(0.0));
    CHECK(f[1].sink_share == doctest::Approx(1.0));
    CHECK(f[1].sink_key == 2);
}

TEST_CASE("html: a page of two batch rows holds each row's weights, mask and figures") {
    // row 0: uniform over 4 keys; row 1: keys 2 and 3 padded (masked), every row on key 0
    attn::AttentionPage p;
    p.tq = p.tk = 4;
    p.batches = 2;
    for (int i = 0; i < 16; ++i) p.weights.push_back(0.25f);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) p.weights.push_back(j == 0 ? 1.0f : 0.0f);
    p.allowed.assign(16, 1);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) p.allowed.push_back(j < 2 ? 1 : 0);
    const std::string html = attn::attention_html(p);
    const auto data = page_data(html);
    CHECK(data["B"] == 2);
    CHECK(data["L"] == 1);
    CHECK(data["mask"]["heads"] == 1);
    const auto bits = base64_decode(data["mask"]["bits"].get<std::string>());
    REQUIRE(bits.size() == 4);
    CHECK(bits[0] == 0xff);  // row 0: every pair allowed
    CHECK(bits[2] == 0x33);  // row 1: keys 0 and 1 of queries 0 and 1
    const auto f = attn::html_head_figures(p);
    REQUIRE(f.size() == 2);
    CHECK(f[0].entropy == doctest::Approx(1.0));
    CHECK(f[1].entropy == doctest::Approx(0.0));  // one key of the two allowed
    CHECK(f[1].sink_key == 0);
    const auto b = page_blocks(html, "w", 2);
    REQUIRE(b.size() == 2 * 32);  // float16, both rows
    CHECK(attn::half_to_float(uint16_t(b[32] | (b[33] << 8))) == 1.0f);
    p.batches = 3;  // the vectors do not hold 3 rows
    CHECK_THROWS_AS(attn::attention_html(p), std::invalid_argument);
}

TEST_CASE("html: attention_html refuses vectors of the wrong size") {
    attn::AttentionPage p = random_page(1, 1, 3, false, 4);
    p.scores.resize(2);
    CHECK_THROWS_AS(attn::attention_html(p), std::invalid_argument);
    p = random_page(1, 1, 3, false, 4);
    p.q_tokens = {"a"};
    CHECK_THROWS_AS(attn::attention_html(p), std::invalid_argument);
}

TEST_CASE("html: --html on attn forward and attn view writes the page whole") {
    const std::string dir = attn::test::temp_dir("html");
    const std::string page = dir + "/f.html";
    auto r = attn::test::run_attn("forward --seq 5 --heads 2 --batch 1 --mask causal --html '" + page + "' --lang zh");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    CHECK(r.out.find("wrote " + page) != std::string::npos);
    const std::string html = read_text(page);
    const auto data = page_data(html);
    CHECK(data["lang"] == "zh");
    CHECK(data["H"] == 2);
    CHECK(data["Tq"] == 5);
    CHECK(data["scores"] == true);  // the scores, for the hover: float16, one block per head
    CHECK(page_blocks(html, "s", 2).size() == 2 * 2 * 5 * 5);
    CHECK(data["vn"].is_string());  // the value norms, for the norm-based view
    CHECK(data["mask"].is_object());
    bool has_weights_shape = false;
    for (const auto& s : data["shapes"]) has_weights_shape |= s[0] == "weights" && s[1] == "[1, 2, 5, 5]";
    CHECK(has_weights_shape);
    for (const auto& e : std::filesystem::directory_iterator(dir))
        CHECK(e.path().filename().string().find(".attn.") != 0);  // no temp file left

    // attn view: a dump whose tokens are markup
    const std::string dump = dir + "/d.json";
    r = attn::test::run_attn("forward --seq 3 --heads 1 --batch 1 --dump '" + dump + "'");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    nlohmann::json j = nlohmann::json::parse(read_text(dump));
    j["config"]["tokens"] = {"<img src=x onerror=alert(1)>", "</script>", "ok"};
    std::ofstream(dump) << j.dump();
    r = attn::test::run_attn("view '" + dump + "' --html '" + dir + "/v.html'");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const std::string v = read_text(dir + "/v.html");
    CHECK(v.find("<img") == std::string::npos);
    CHECK(count(v, "</script>") == 2 + 2);  // the data block, the script, one head's weights and its scores
    CHECK(page_data(v)["q"][0] == "<img src=x onerror=alert(1)>");

    // a model dump: every layer in one page
    r = attn::test::run_attn("view '" + attn::test::source_path("data/example-dump.json") + "' --html '" + dir +
                             "/e.html'");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    CHECK(page_data(read_text(dir + "/e.html"))["H"] == 2);

    // refusals: one line, exit 2, nothing written
    r = attn::test::run_attn("forward --html -");
    CHECK(r.code == 2);
    CHECK(r.out.find("--html") != std::string::npos);
    r = attn::test::run_attn("forward --html '" + dir + "/x.html' --lang fr");
    CHECK(r.code == 2);
    r = attn::test::run_attn("forward --impl flash --html '" + dir + "/x.html'");
    CHECK(r.code == 2);
    CHECK(r.out.find("--html") != std::string::npos);
    r = attn::test::run_attn("forward --html '" + dir + "/no/such/dir/x.html'");
    CHECK(r.code == 2);
    CHECK(!std::filesystem::exists(dir + "/x.html"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("html: attn tour --html holds the same record as attn tour --json") {
    const std::string dir = attn::test::temp_dir("tour-html");
    const std::string page = dir + "/tour.html";
    // lessons 2 to 5: lesson 1 adds a training experiment's evidence and nothing this test needs
    auto r = attn::test::run_attn("tour --from 2 --to 5 --seed 3 --html '" + page + "'");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const std::string html = read_text(page);
    const auto embedded =
        nlohmann::json::parse(between(html, "<script type=\"application/json\" id=\"attn-tour\">", "</script>"));
    r = attn::test::run_shell("'" + std::string(ATTN_BINARY) +
                              "' tour --from 2 --to 5 --seed 3 --json --json-nonfinite string");
    REQUIRE(r.code == 0);
    const auto json = nlohmann::json::parse(r.out);
    CHECK(embedded == json);  // every figure, check and table, number for number
    CHECK(count(html, "<details class=\"lesson\"") == 4);
    CHECK(embedded["lessons"].size() == 4);
    // each lesson opens with the block, its own steps highlighted (lesson 4, softmax: one step)
    CHECK(count(html, "<div class=\"figs pipeline\">") == 4);
    CHECK(html.find("Lesson 4: its steps in the Transformer block") != std::string::npos);
    // styled checks: one <li> per check of the record
    size_t checks = 0;
    for (const auto& l : json["lessons"]) checks += l.contains("checks") ? l["checks"].size() : 0;
    CHECK(count(html, "<li class=\"measured\">") + count(html, "<li class=\"identity\">") == checks);
    // only the style and the embedded views' script and style, admitted by hash
    const std::string csp = between(html, "http-equiv=\"Content-Security-Policy\" content=\"", "\"");
    CHECK(csp.starts_with("default-src 'none';"));
    CHECK(csp.find("script-src " + attn::attention_html_script_source() + ";") != std::string::npos);
    CHECK(csp.find("unsafe") == std::string::npos);
    CHECK(csp.find("style-src 'sha256-" + attn::sha256_base64(between(html, "<style>", "</style>")) + "'") !=
          std::string::npos);
    CHECK(html.find("href=") == std::string::npos);  // nothing to load (the inline SVGs name their xmlns only)
    CHECK(html.find("src=") == std::string::npos);
    // one lesson: the same section and record as the tour's
    r = attn::test::run_attn("lesson 4 --seed 3 --html '" + dir + "/l4.html'");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const std::string l4 = read_text(dir + "/l4.html");
    CHECK(count(l4, "<details class=\"lesson\"") == 1);
    const auto rec4 =
        nlohmann::json::parse(between(l4, "<script type=\"application/json\" id=\"attn-tour\">", "</script>"));
    CHECK(rec4["lessons"][0] == json["lessons"][2]);  // lessons 2, 3, 4, 5
    CHECK(attn::test::run_attn("lesson 4 --json --html '" + dir + "/l4.html'").code == 2);
    CHECK(attn::test::run_attn("tour --html - ").code == 2);
    CHECK(attn::test::run_attn("tour --json --html '" + page + "'").code == 2);
    std::filesystem::remove_all(dir);
}

TEST_CASE(
    "html: --html on attn train shows every layer of the trained attention, on attn decode every step's weights") {
    const std::string dir = attn::test::temp_dir("html-train");
    SUBCASE("train: the --dump rows' weights, all layers, row 0") {
        auto r =
            attn::test::run_attn("train --task copy --steps 20 --layers 2 --heads 2 --d-model 16 --seed 5 -q --html '" +
                                 dir + "/t.html' --dump '" + dir + "/t.json'");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const std::string html = read_text(dir + "/t.html");
        const auto data = page_data(html);
        const auto dump = nlohmann::json::parse(read_text(dir + "/t.json"));
        CHECK(data["L"] == 2);
        CHECK(data["H"] == 2);
        const int64_t T = data["Tq"].get<int64_t>();
        CHECK(T == dump["config"]["seq"].get<int64_t>());
        CHECK(data["q"] == dump["config"]["tokens"][0]);
        // each layer's heads are that layer's weights of batch row 0, within the stated error
        const auto b = page_blocks(html, "w", 4);
        REQUIRE(b.size() == static_cast<size_t>(2 * 2 * T * T * 2));
        double err = 0;
        for (int64_t l = 0; l < 2; ++l) {
            const auto& w = dump["tensors"]["weights_layer" + std::to_string(l)]["data"];
            for (int64_t k = 0; k < 2 * T * T; ++k) {  // batch row 0: the first H * T * T values
                const size_t at = static_cast<size_t>(l * 2 * T * T + k);
                err = std::max(err, std::fabs(double(attn::half_to_float(uint16_t(b[2 * at] | (b[2 * at + 1] << 8)))) -
                                              w[static_cast<size_t>(k)].get<double>()));
            }
        }
        CHECK(err <= data["maxerr"].get<double>() + 1e-6);  // + the dump's decimal rounding
        CHECK(attn::test::run_attn("train --task copy --steps 1 --html - ").code == 2);
        CHECK(attn::test::run_attn("train --task copy --steps 1 --html '" + dir + "/x' --dump '" + dir + "/x'").code ==
              2);
    }
    SUBCASE("train: the characters of a corpus reach the page as text") {
        std::string text;
        for (int i = 0; i < 30; ++i) text += "</script><img src=x onerror=alert(1)> and <b>more</b> words to learn. ";
        std::ofstream(dir + "/c.txt") << text;
        auto r = attn::test::run_attn("train --task chars --corpus '" + dir +
                                      "/c.txt' --seq 24 --steps 2 --layers 1 -q --html '" + dir + "/c.html'");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        const std::string html = read_text(dir + "/c.html");
        CHECK(html.find("<img") == std::string::npos);
        CHECK(html.find("<b>") == std::string::npos);
        CHECK(count(html, "</script>") == count(html, "<script"));
    }
    SUBCASE("decode: row t is step t's weights over the t + 1 cached keys") {
        auto r = attn::test::run_attn("decode --steps 6 --layers 2 --heads 3 --d-model 12 --seed 2 --html '" + dir +
                                      "/d.html'");
        REQUIRE_MESSAGE(r.code == 0, r.out);
        CHECK(r.out.find("wrote " + dir + "/d.html") != std::string::npos);
        const std::string html = read_text(dir + "/d.html");
        const auto data = page_data(html);
        CHECK(data["L"] == 2);
        CHECK(data["H"] == 3);
        CHECK(data["Tq"] == 6);
        CHECK(data["scores"] == true);
        REQUIRE(data["mask"].is_object());
        const auto b = page_blocks(html, "w", 6);
        REQUIRE(b.size() == 2 * 6 * 36);
        const double tol = 6 * data["maxerr"].get<double>() + 1e-6;
        for (int64_t k = 0; k < 6; ++k)
            for (int64_t i = 0; i < 6; ++i) {
                double sum = 0, after = 0;
                for (int64_t j = 0; j < 6; ++j) {
                    const size_t at = static_cast<size_t>((k * 6 + i) * 6 + j);
                    const double w = attn::half_to_float(uint16_t(b[2 * at] | (b[2 * at + 1] << 8)));
                    (j <= i ? sum : after) += w;
                }
                CHECK(sum == doctest::Approx(1.0).epsilon(tol));
                CHECK(after == 0.0);  // keys after the step are not in the cache yet
            }
        // with --json on stdout the page's line goes to stderr: stdout stays JSON
        r = attn::test::run_shell("'" + std::string(ATTN_BINARY) + "' decode --steps 3 --json --html '" + dir +
                                  "/e.html' 2>/dev/null");
        REQUIRE(r.code == 0);
        CHECK(nlohmann::json::parse(r.out)["format"] == "attn-decode");
        CHECK(attn::test::run_attn("decode --html - ").code == 2);
    }
    std::filesystem::remove_all(dir);
}

namespace {

// An attribute's value as the HTML parser reads it: the entities tour_html's escape() writes, undone.
std::string unescape_attr(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '&') {
            out += s[i];
            continue;
        }
        for (const auto& [ent, ch] : {std::pair{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}})
            if (s.compare(i, std::strlen(ent), ent) == 0) {
                out += ch;
                i += std::strlen(ent) - 1;
                break;
            }
    }
    return out;
}

}  // namespace

TEST_CASE("html: the tour page shows a lesson's attention weights as interactive views, the record's numbers") {
    const std::string dir = attn::test::temp_dir("tour-views");
    auto r = attn::test::run_attn("lesson 8 --seed 3 --html '" + dir + "/l8.html'");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const std::string html = read_text(dir + "/l8.html");
    const auto rec =
        nlohmann::json::parse(between(html, "<script type=\"application/json\" id=\"attn-tour\">", "</script>"));
    const auto& heatmaps = rec["lessons"][0]["heatmaps"];
    REQUIRE(heatmaps.size() == 3);  // padding, causal, both: all three are weights
    CHECK(count(html, "<iframe class=\"view\"") == 3);
    for (const auto& [key, hm] : heatmaps.items()) {
        CAPTURE(key);
        const std::string open = "<iframe class=\"view\" id=\"view-8-" + key + "\"";
        REQUIRE(html.find(open) != std::string::npos);
        const std::string page = unescape_attr(between(html.substr(html.find(open)), "srcdoc=\"", "\""));
        const auto data = page_data(page);
        CHECK(data["title"] == hm["title"]);
        CHECK(data["q"] == hm["row_labels"]);
        const int64_t n = hm["rows"].get<int64_t>() * hm["cols"].get<int64_t>();
        const auto b = page_blocks(page, "w", 1);
        REQUIRE(b.size() == static_cast<size_t>(2 * n));
        double err = 0;
        for (int64_t k = 0; k < n; ++k)
            err = std::max(err, std::fabs(double(attn::half_to_float(uint16_t(b[2 * k] | (b[2 * k + 1] << 8)))) -
                                          hm["values"][static_cast<size_t>(k)].get<double>()));
        CHECK(err <= std::ldexp(1.0, -12));  // float16 below 1
        // the view's own policy admits the same script the tour's policy admits
        CHECK(page.find("script-src " + attn::attention_html_script_source()) != std::string::npos);
    }
    // the similarity of heads (lesson 11) is not a weight matrix: no view for it
    r = attn::test::run_attn("lesson 11 --seed 3 --html '" + dir + "/l11.html'");
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const std::string l11 = read_text(dir + "/l11.html");
    CHECK(l11.find("id=\"view-11-similarity\"") == std::string::npos);
    CHECK(l11.find("id=\"view-11-head0\"") != std::string::npos);
    std::filesystem::remove_all(dir);
}
