// app/tour_html.hpp: `attn tour --html FILE`: the tour as one self-contained page.
#pragma once

#include <string>

#include "lesson.hpp"

namespace attn::cli {

// Runs lessons [from, to] (of one part of the tour with core or advanced) with
// `opt` (text mode, no colour, no pauses; each
// lesson's text captured) and writes one page to `file` (whole or not at all):
// a collapsible section per lesson with its text, its heatmaps as inline SVG
// and its checks styled by kind, then the scorecard; the same record that
// `attn tour --json` prints is embedded (id attn-tour), non-finite numbers as
// strings. Returns the number of checks that failed.
int run_tour_html(const std::string& file, lessons::RunOptions opt, int from, int to, bool core = false,
                  bool advanced = false);

}  // namespace attn::cli
