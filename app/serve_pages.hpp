// app/serve_pages.hpp: the pages `attn serve` serves, compiled into the binary
// (the script and style sheet are app/serve/lab.js and lab.css, embedded at build
// time by cmake/embed_text.cmake). No path of a request reaches the file system.
#pragma once

#include <string>
#include <vector>

namespace attn::cli {

// Every page's policy: its script and style from this server only, requests to
// this server only, no plugin, no framing by others, no inline script.
inline constexpr const char* kPageCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

struct PageAsset {
    const char* path;   // "/playground"
    const char* mime;   // "text/html; charset=utf-8"
    bool html;          // a page (built by page_html) or a file (body)
    const char* page;   // the page's name for the script ("playground"), "" for the index
    const char* body;   // a file's text
};

// The index, the six pages, the script and the style sheet.
const std::vector<PageAsset>& page_assets();

// The whole HTML of page `a` in `lang` ("en" or "zh").
std::string page_html(const PageAsset& a, const std::string& lang);

}  // namespace attn::cli
