// The attention page's stylesheet and script (html_assets.cpp), inline in every
// page that attention_html writes; the CSP admits them by their SHA-256.
#pragma once

namespace attn {
extern const char* const kHtmlCss;
extern const char* const kHtmlJs;
}  // namespace attn
