// viz::line_chart (attn/viz/chart.hpp): round ticks, labels that keep apart, series in
// legend order, and the four plots the program draws with it (attn variance, attn
// variants, attn train, attn experiment). Text boxes are estimated with the document's
// rule (svg_text_extent: glyph width x characters, 0.8 em above the baseline, 0.25
// below) from the attributes written in the SVG, then checked against the canvas and
// against each other.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/experiments/experiment.hpp"
#include "attn/io/dump.hpp"
#include "attn/viz/chart.hpp"
#include "attn/viz/svg.hpp"
#include "svg_test_util.hpp"
#include "test_util.hpp"

namespace {

using attn::SvgBox;

struct Text {
    std::string s;
    SvgBox box;
};

using attn::test::xml_unescape;
using attn::test::svg_attr;

// Every <text> of an SVG document with its estimated box.
std::vector<Text> texts_of(const std::string& svg) {
    std::vector<Text> out;
    const std::regex re("<text([^>]*)>([^<]*)</text>");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) {
        const std::string tag = (*it)[1].str(), s = xml_unescape((*it)[2].str());
        std::string anchor;
        if (tag.find("text-anchor=\"middle\"") != std::string::npos) anchor = "middle";
        if (tag.find("text-anchor=\"end\"") != std::string::npos) anchor = "end";
        double rot = 0;
        std::smatch m;
        if (std::regex_search(tag, m, std::regex("rotate\\(([-0-9.]+)"))) rot = std::stod(m[1].str());
        out.push_back(
            {s, attn::svg_text_extent(svg_attr(tag, "x", 0), svg_attr(tag, "y", 0), s, svg_attr(tag, "font-size", 12),
                                      tag.find("font-weight=\"bold\"") != std::string::npos, anchor, rot)});
    }
    return out;
}

SvgBox view_box(const std::string& svg) {
    std::smatch m;
    REQUIRE(std::regex_search(svg, m, std::regex("viewBox=\"([-0-9.]+) ([-0-9.]+) ([-0-9.]+) ([-0-9.]+)\"")));
    const double x = std::stod(m[1].str()), y = std::stod(m[2].str());
    return {x, y, x + std::stod(m[3].str()), y + std::stod(m[4].str())};
}

// Problems of a document: a text outside `canvas`, two texts whose boxes overlap.
std::vector<std::string> layout_problems(const std::string& svg, const SvgBox& canvas) {
    const auto t = texts_of(svg);
    std::vector<std::string> bad;
    const double eps = 0.25;
    for (const Text& a : t)
        if (a.box.x0 < canvas.x0 - eps || a.box.y0 < canvas.y0 - eps || a.box.x1 > canvas.x1 + eps ||
            a.box.y1 > canvas.y1 + eps)
            bad.push_back(fmt::format(
                "\"{}\" x {:.1f}..{:.1f} y {:.1f}..{:.1f} leaves the canvas x {:.0f}..{:.0f} y {:.0f}..{:.0f}", a.s,
                a.box.x0, a.box.x1, a.box.y0, a.box.y1, canvas.x0, canvas.x1, canvas.y0, canvas.y1));
    for (size_t i = 0; i < t.size(); ++i)
        for (size_t j = i + 1; j < t.size(); ++j) {
            const SvgBox &a = t[i].box, &b = t[j].box;
            if (std::min(a.x1, b.x1) - std::max(a.x0, b.x0) > eps && std::min(a.y1, b.y1) - std::max(a.y0, b.y0) > eps)
                bad.push_back(fmt::format("\"{}\" overlaps \"{}\"", t[i].s, t[j].s));
        }
    return bad;
}

void check_layout(const std::string& what, const std::string& svg, const SvgBox& canvas) {
    CAPTURE(what);
    const auto bad = layout_problems(svg, canvas);
    std::string shown;
    for (const auto& b : bad) shown += "\n  " + b;
    CHECK(texts_of(svg).size() >= 4);
    CHECK_MESSAGE(bad.empty(), fmt::format("{} layout problems:{}", bad.size(), shown));
}

// A chart alone on a W x H document; its frame is the whole canvas, so a text that
// needed the canvas to grow shows as leaving (0, 0, W, H).
std::string alone(const attn::viz::LineChart& c, double W = 480, double H = 320) {
    attn::SvgDocument doc(W, H, "chart");
    attn::viz::line_chart(doc, {0, 0, W, H}, c);
    return doc.str();
}

attn::viz::Series series(std::string label, std::vector<double> x, std::vector<double> y) {
    attn::viz::Series s;
    s.label = std::move(label), s.x = std::move(x), s.y = std::move(y);
    return s;
}

}  // namespace

TEST_CASE("chart: nice ticks are k x 1, 2 or 5 x 10^n and cover the range") {
    for (auto [lo, hi] :
         {std::pair{0.0, 1.83}, {0.0, 1.0}, {-3.0, 17.0}, {0.0013, 0.0071}, {120.0, 9800.0}, {2.0, 2.5}}) {
        CAPTURE(lo);
        CAPTURE(hi);
        const auto t = attn::viz::nice_ticks(lo, hi);
        REQUIRE(t.size() >= 2);
        CHECK(t.size() <= 11);
        const double step = t[1] - t[0];
        const double mant = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
        CHECK(std::min({std::abs(mant - 1), std::abs(mant - 2), std::abs(mant - 5)}) < 1e-6);
        for (double v : t) {
            CHECK(v >= lo - 1e-9);
            CHECK(v <= hi + 1e-9);
            CHECK(std::abs(v / step - std::round(v / step)) < 1e-6);
        }
    }
    // the ticks the loss curve had (0.609, 1.22, 1.83) are not round; these are
    CHECK(attn::viz::tick_text(0.5, 0.5) == "0.5");
    CHECK(attn::viz::tick_text(1.0, 0.5) == "1.0");
    CHECK(attn::viz::tick_text(300, 100) == "300");
    CHECK(attn::viz::tick_text(0.02, 0.02) == "0.02");
    const auto lt = attn::viz::log_ticks(3, 900);
    CHECK(lt == std::vector<double>{5, 10, 20, 50, 100, 200, 500});
    CHECK(attn::viz::log_ticks(1e-3, 1e5).size() <= 7);
    CHECK(attn::viz::log_ticks(0.3, 0.9).size() >= 2);  // within a decade: linear round values
}

TEST_CASE("chart: texts stay on the canvas and apart, whatever the axes") {
    using namespace attn::viz;
    std::vector<double> xs, a, b;
    for (int i = 0; i <= 40; ++i) xs.push_back(i * 250.0), a.push_back(4.0 * std::exp(-i / 8.0)), b.push_back(i / 40.0);
    SUBCASE("linear, two y axes, legend below") {
        LineChart c;
        c.title = "training loss and accuracy";
        c.x.title = "step";
        c.y = {.title = "cross-entropy loss (nats)", .zero = true};
        c.y2 = {.title = "eval accuracy", .min = 0, .max = 1, .label = [](double v) {
                    return fmt::format("{:.0f}%", 100 * v);
                }};
        c.series = {series("training loss (batch mean)", xs, a), series("eval accuracy (right axis)", xs, b)};
        c.series[1].right_axis = true;
        check_layout("two axes", alone(c), {0, 0, 480, 320});
    }
    SUBCASE("log-log with bytes, many x ticks, legend right, long labels") {
        LineChart c;
        c.legend = LegendPlace::Right;
        c.x = {.title = "T (log)", .log = true, .ticks = {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}};
        c.y = {.title = "extra memory (log)", .log = true, .bytes = true};
        std::vector<double> T = {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}, m1, m2;
        for (double t : T) m1.push_back(4 * t * t), m2.push_back(4 * 64 * t);
        c.series = {series("reference (stores the T x T scores)", T, m1), series("flash", T, m2)};
        check_layout("log-log bytes", alone(c, 560, 300), {0, 0, 560, 300});
    }
    SUBCASE("a narrow panel with a title longer than the plot is tall") {
        LineChart c;
        c.y.title = "a y title much longer than the plot is tall, it is shrunk to fit";
        c.x.title = "x";
        c.series = {series("one", {0, 1, 2}, {0.609, 1.22, 1.83})};
        check_layout("narrow", alone(c, 220, 160), {0, 0, 220, 160});
    }
    SUBCASE("many series wrap the legend onto rows") {
        LineChart c;
        c.x.title = "step";
        c.y.title = "loss";
        for (int k = 0; k < 9; ++k) {
            std::vector<double> y;
            for (double v : a) y.push_back(v * (1 + 0.1 * k));
            c.series.push_back(series(fmt::format("series number {}", k), xs, y));
        }
        check_layout("wrapped legend", alone(c), {0, 0, 480, 320});
    }
}

TEST_CASE("chart: round ticks where the old loss plot had 0.609, 1.22, 1.83") {
    using namespace attn::viz;
    LineChart c;
    c.y = {.title = "loss", .zero = true};
    c.series = {series("loss", {0, 10, 20}, {1.74, 1.0, 0.3})};
    const std::string svg = alone(c);
    bool saw_half = false;
    for (const Text& t : texts_of(svg)) {
        CHECK(t.s != "0.609");
        saw_half = saw_half || t.s == "0.5" || t.s == "1.5";
    }
    CHECK(saw_half);
}

TEST_CASE("chart: series drawn in legend order, markers on sparse series, coinciding curves named") {
    using namespace attn::viz;
    LineChart c;
    c.x.title = "Dk";
    c.y.title = "std";
    std::vector<double> dense_x, dense_y;
    for (int i = 0; i < 100; ++i) dense_x.push_back(i), dense_y.push_back(i * 0.5);
    c.series = {series("measured", dense_x, dense_y), series("theory", {0, 99}, {0, 49.5}),
                series("copy", dense_x, dense_y)};
    c.series[1].color = "#555555";
    c.series[1].dash = "6 4";
    const std::string svg = alone(c);
    // the polylines in the order of the series; the theory line after the measured one (on top)
    const size_t p_measured = svg.find("stroke=\"" + palette()[0] + "\" stroke-width");
    const size_t p_theory = svg.find("stroke=\"#555555\" stroke-width");
    REQUIRE(p_measured != std::string::npos);
    REQUIRE(p_theory != std::string::npos);
    CHECK(p_measured < p_theory);
    // the two-point theory line has markers, the 100-point measured line none
    CHECK(svg.find("<circle") != std::string::npos);
    size_t circles = 0;
    for (size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1)) ++circles;
    CHECK(circles == 3);  // two on the line, one in its legend entry
    // the third series lies exactly on the first: the legend says so
    CHECK(svg.find("copy (covers measured)") != std::string::npos);
    // Draw::Markers: no polyline at all
    LineChart m;
    m.series = {series("eval", {0, 500, 1000}, {3, 1, 0.5})};
    m.series[0].draw = Draw::Markers;
    const std::string ms = alone(m);
    CHECK(ms.find("<polyline") == std::string::npos);
    CHECK(ms.find("<circle") != std::string::npos);
}

TEST_CASE("chart: a log axis puts values at log positions and skips values <= 0") {
    using namespace attn::viz;
    LineChart c;
    c.x = {.log = true, .min = 1, .max = 100};
    c.y = {.min = 0, .max = 1};
    c.series = {series("s", {1, 10, 100, -5}, {0, 0.5, 1, 0.5})};
    c.series[0].draw = Draw::Line;
    attn::SvgDocument doc(400, 300, "t");
    const SvgBox plot = line_chart(doc, {0, 0, 400, 300}, c);
    const std::string svg = doc.str();
    std::smatch m;
    REQUIRE(std::regex_search(svg, m, std::regex("<polyline points=\"([^\"]*)\"")));
    const std::string pts = m[1].str();
    CHECK(std::count(pts.begin(), pts.end(), ',') == 3);  // the x = -5 point is gone
    // x = 10 lies half way across, y = 0.5 half way up
    REQUIRE(std::regex_search(pts, m, std::regex("^[-0-9.]+,[-0-9.]+ ([-0-9.]+),([-0-9.]+)")));
    CHECK(std::stod(m[1].str()) == doctest::Approx((plot.x0 + plot.x1) / 2).epsilon(0.01));
    CHECK(std::stod(m[2].str()) == doctest::Approx((plot.y0 + plot.y1) / 2).epsilon(0.01));
}

TEST_CASE("chart: the experiment plot, eight curves of which seven coincide, has a y title and fits") {
    attn::ExperimentResult r;
    r.name = "overfit";
    std::vector<double> x, clean, buggy;
    for (int s = 0; s <= 300; s += 10) {
        x.push_back(s);
        clean.push_back(3.5 * std::exp(-s / 40.0) + 1e-3);
        buggy.push_back(3.5 * std::exp(-s / 60.0) + 2e-3);
    }
    r.curves.push_back({"loss on the 32 sequences", "clean", "step", x, clean});
    for (int b = 0; b < 7; ++b)
        r.curves.push_back({"loss on the 32 sequences", fmt::format("bug {}", b), "step", x, buggy});
    const std::string svg = attn::experiment_svg(r);
    check_layout("experiment_svg", svg, view_box(svg));
    bool y_title = false;
    for (const Text& t : texts_of(svg)) y_title = y_title || (t.s == "loss on the 32 sequences (log)");
    CHECK(y_title);
    CHECK(svg.find("(covers bug 0)") != std::string::npos);
}

// The CLI's plots, rendered small and fast; texts inside the canvas and apart.
TEST_CASE("CLI: the plots of variance, variants, train and experiment keep their texts apart") {
    const std::string dir = attn::test::temp_dir("chart");
    const std::pair<const char*, std::string> runs[] = {
        {"variance", "variance --svg " + dir + "/v.svg"},
        {"variants",
         "variants --t 64,128,256 --heads 1 --dk 16 --window 16 --error-t 64 --favor-m 16 --no-model --svg " + dir +
             "/vs.svg"},
        {"train", "train --task copy --steps 30 --svg " + dir + "/t.svg"},
    };
    for (const auto& [name, args] : runs) {
        CAPTURE(args);
        const auto p = attn::test::run_attn(args);
        REQUIRE_MESSAGE(p.code == 0, p.out);
    }
    for (const char* f : {"v.svg", "vs.svg", "t.svg"}) {
        const std::string svg = attn::read_file(dir + "/" + f);
        check_layout(f, svg, view_box(svg));
    }
    // the loss curve's y ticks are round (steps of 1, 2 or 5 x 10^k)
    const std::string t = attn::read_file(dir + "/t.svg");
    for (const Text& tx : texts_of(t)) CHECK(tx.s.find("0.609") == std::string::npos);
    std::filesystem::remove_all(dir);
}
