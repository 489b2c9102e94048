// The attention page's stylesheet and script, inline in every page that attention_html writes
// (the CSP admits them by their SHA-256). They are the files html_page.css and html_page.js,
// compiled in by cmake/embed_text.cmake (lib/CMakeLists.txt).
#pragma once

namespace attn {
extern const char* const kHtmlCss;
extern const char* const kHtmlJs;
}  // namespace attn
