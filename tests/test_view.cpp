// Tests of `attn view`: heatmaps from a dump, token labels, --svg output, and
// one-line errors (exit 2) for bad files and out-of-range --batch / --head.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <limits>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "attn/io/dump.hpp"
#include "attn/viz/heatmap.hpp"
#include "test_util.hpp"

bool xml_well_formed(const std::string& s, std::string* why);

namespace {

using Proc = attn::test::CliResult;

Proc run_view(const std::string& args) { return attn::test::run_attn("view " + args); }

std::string tmp(const std::string& name) { return "/tmp/attn-test-view-" + std::to_string(getpid()) + "-" + name; }

// A dump with weights [B=2, H=2, T=3, T], tokens and a mask, as attn forward writes.
std::string write_dump(const std::string& name) {
    attn::Dump d;
    d.config = {{"batch", 2}, {"seq", 3}, {"heads", 2}, {"tokens", {{"<s>", "a&b", "cat"}, {"x", "y", "<pad>"}}}};
    std::vector<float> w;
    for (int b = 0; b < 2; ++b)
        for (int h = 0; h < 2; ++h)
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) w.push_back(j == (i + h) % 3 ? 0.7f : 0.15f);
    d.tensors["weights"] = attn::Tensor::from({2, 2, 3, 3}, w);
    d.tensors["mask"] = attn::Tensor({2, 3, 3}, 1.0f);
    const std::string path = tmp(name);
    attn::write_file_atomic(path, attn::dump_to_string(d));
    return path;
}

std::string slurp(const std::string& path) {
    std::string s;
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return s;
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) s.append(buf.data(), n);
    std::fclose(f);
    return s;
}

}  // namespace

TEST_CASE("view: every head of a batch row, with token labels, and an SVG") {
    const std::string dump = write_dump("ok.json"), svg = tmp("ok.svg");
    const Proc p = run_view("'" + dump + "' --batch 1 --svg '" + svg + "'");
    CHECK(p.code == 0);
    CHECK(p.out.find("batch 1, head 0") != std::string::npos);
    CHECK(p.out.find("batch 1, head 1") != std::string::npos);
    CHECK(p.out.find("<pad>") != std::string::npos);
    CHECK(p.out.find("mean entropy") != std::string::npos);
    CHECK(p.out.find('\x1b') == std::string::npos);
    const std::string text = slurp(svg);
    std::string why;
    CHECK_MESSAGE(xml_well_formed(text, &why), why);
    CHECK(text.find("&lt;pad&gt;") != std::string::npos);
    CHECK(text.find("Attention weights from") != std::string::npos);
    std::remove(svg.c_str());
    // one head only
    const Proc h = run_view("'" + dump + "' --head 1");
    CHECK(h.code == 0);
    CHECK(h.out.find("batch 0, head 1") != std::string::npos);
    CHECK(h.out.find("head 0") == std::string::npos);
    CHECK(h.out.find("a&b") != std::string::npos);
    std::remove(dump.c_str());
}

TEST_CASE("view: bad input is one line naming the file or option, exit 2, no SVG written") {
    const std::string dump = write_dump("bad.json"), svg = tmp("never.svg");
    Proc p = run_view("'" + dump + "' --batch 2 --svg '" + svg + "'");
    CHECK(p.code == 2);
    CHECK(p.out.find("--batch") != std::string::npos);
    CHECK(slurp(svg).empty());
    p = run_view("'" + dump + "' --head 5");
    CHECK(p.code == 2);
    CHECK(p.out.find("--head: must be in 0..1") != std::string::npos);
    p = run_view("'" + dump + "' --head -1");
    CHECK(p.code == 2);
    p = run_view("/nonexistent/file.json");
    CHECK(p.code == 2);
    CHECK(p.out.find("/nonexistent/file.json") != std::string::npos);
    // valid JSON but not a dump; a dump without weights; weights of the wrong rank
    const std::string notdump = tmp("notdump.json");
    attn::write_file_atomic(notdump, "{\"hello\": 1}");
    p = run_view("'" + notdump + "'");
    CHECK(p.code == 2);
    attn::Dump d;
    d.tensors["x"] = attn::Tensor({1, 2, 2});
    attn::write_file_atomic(notdump, attn::dump_to_string(d));
    p = run_view("'" + notdump + "'");
    CHECK(p.code == 2);
    CHECK(p.out.find("no \"weights\" tensor") != std::string::npos);
    d.tensors["weights"] = attn::Tensor({2, 3, 3});
    attn::write_file_atomic(notdump, attn::dump_to_string(d));
    p = run_view("'" + notdump + "'");
    CHECK(p.code == 2);
    CHECK(p.out.find("[B, H, T, T]") != std::string::npos);
    for (const Proc* q : {&p}) CHECK(q->out.find('\n') == q->out.size() - 1);  // one line
    // weights that are not probabilities would print an entropy of nan or -inf nats: refused,
    // naming the file, the value and where it is
    for (const float bad :
         {-1.0f, 1e38f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        CAPTURE(bad);
        attn::Tensor w({1, 1, 2, 2});
        w.data = {0.5f, 0.5f, 1.0f, bad};
        d.tensors["weights"] = w;
        attn::write_file_atomic(notdump, attn::dump_to_string(d));
        p = run_view("'" + notdump + "'");
        CHECK(p.code == 2);
        CHECK(p.out.find(notdump + ": the attention weights must each be in [0, 1]") != std::string::npos);
        CHECK(p.out.find("at flat index 3") != std::string::npos);
        CHECK(p.out.find('\n') == p.out.size() - 1);
    }
    std::remove(notdump.c_str());
    std::remove(dump.c_str());
}

TEST_CASE("view: reads what attn forward --dump writes") {
    const std::string dump = tmp("fwd.json");
    const std::string cmd =
        std::string("'") + ATTN_BINARY + "' forward --heads 2 --mask causal --dump '" + dump + "' > /dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const Proc p = run_view("'" + dump + "' --head 1");
    CHECK(p.code == 0);
    CHECK(p.out.find("batch 0, head 1") != std::string::npos);
    CHECK(p.out.find("(mask from the dump)") != std::string::npos);
    std::remove(dump.c_str());
}

TEST_CASE("view: a long sequence is cropped in the terminal, whole in the SVG") {
    attn::Dump d;
    const int64_t T = 60;
    std::vector<float> w(static_cast<size_t>(T * T), 1.0f / static_cast<float>(T));
    d.tensors["weights"] = attn::Tensor::from({1, 1, T, T}, w);
    const std::string dump = tmp("long.json"), svg = tmp("long.svg");
    attn::write_file_atomic(dump, attn::dump_to_string(d));
    const Proc p = run_view("'" + dump + "' --svg '" + svg + "'");
    CHECK(p.code == 0);
    CHECK(p.out.find("shows the first 40 queries and keys") != std::string::npos);
    size_t start = 0;
    for (size_t e = p.out.find('\n'); e != std::string::npos; start = e + 1, e = p.out.find('\n', start)) {
        const std::string line = p.out.substr(start, e - start);
        if (line.find("shade:") != std::string::npos || line.find("mean entropy") != std::string::npos ||
            line.find(".json") != std::string::npos)
            continue;
        CHECK(attn::display_width(line) <= 100);
    }
    const std::string text = slurp(svg);
    size_t rects = 0;
    for (size_t q = text.find("</title></rect>"); q != std::string::npos; q = text.find("</title></rect>", q + 1))
        ++rects;
    CHECK(rects == static_cast<size_t>(T * T));
    std::remove(svg.c_str());
    std::remove(dump.c_str());
}

namespace {
// A dump laid out as `attn model attention --dump` writes it: "attention" [layers=2, B=1, H=2, T=3, T]
// (layer l, head h: query i puts 0.8 on key (i + l + h) % 3) and the tokens.
std::string write_model_layout_dump(const std::string& name) {
    attn::Dump d;
    d.config = {{"model", "hand-made"}, {"tokens", {"[CLS]", "hi", "[SEP]"}}, {"layers", 2}, {"heads", 2}};
    std::vector<float> a;
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 2; ++h)
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) a.push_back(j == (i + l + h) % 3 ? 0.8f : 0.1f);
    d.tensors["attention"] = attn::Tensor::from({2, 1, 2, 3, 3}, a);
    d.order.push_back("attention");
    const std::string path = tmp(name);
    attn::write_file_atomic(path, attn::dump_to_string(d));
    return path;
}
}  // namespace

TEST_CASE("view: reads the layout of attn model attention --dump, one layer at a time") {
    const std::string dump = write_model_layout_dump("model-layout.json"), svg = tmp("model-layout.svg");
    const Proc p = run_view("'" + dump + "' --layer 1 --head 0 --svg '" + svg + "'");
    INFO(p.out);
    REQUIRE(p.code == 0);
    CHECK(p.out.find("weights [1, 2, 3, 3] [B, H, T, T]; layer 1 of 2, batch 0, head 0") != std::string::npos);
    CHECK(p.out.find("[CLS]") != std::string::npos);
    std::string why;
    CHECK_MESSAGE(xml_well_formed(slurp(svg), &why), why);
    // Layer 1, head 0: query 0 ([CLS]) puts 0.8 on key 1 (hi), which the SVG's cell titles carry.
    CHECK(slurp(svg).find("[CLS] \u2192 hi: 0.8") != std::string::npos);
    CHECK(run_view("'" + dump + "'").out.find("layer 0 of 2") != std::string::npos);  // layer 0 by default
    Proc bad = run_view("'" + dump + "' --layer 2");
    CHECK(bad.code == 2);
    CHECK(bad.out.find("--layer: must be in 0..1") != std::string::npos);
    CHECK(bad.out.find('\n') == bad.out.size() - 1);
    const std::string fwd = write_dump("layer-on-forward.json");
    bad = run_view("'" + fwd + "' --layer 0");
    CHECK(bad.code == 2);
    CHECK(bad.out.find("--layer") != std::string::npos);
    for (const std::string& f : {dump, svg, fwd}) std::remove(f.c_str());
}

TEST_CASE("view: reads a dump of attn model attention (skipped without the model)") {
    if (!attn::test::model_or_skip()) return;
    const std::string dump = tmp("model.json");
    const auto m = attn::test::run_attn("model attention --text 'the cat sat' --dump '" + dump + "'");
    INFO(m.out);
    REQUIRE(m.code == 0);
    const Proc p = run_view("'" + dump + "' --layer 5 --head 3");
    INFO(p.out);
    CHECK(p.code == 0);
    CHECK(p.out.find("layer 5 of 6, batch 0, head 3") != std::string::npos);
    CHECK(p.out.find("cat") != std::string::npos);
    std::remove(dump.c_str());
}
