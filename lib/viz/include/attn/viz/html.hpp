// attn/viz/html.hpp: attention weights as one self-contained, interactive HTML page.
//
// attention_html(page) returns a whole HTML document (CSS, script and data
// inline) with three views of the weights of `layers` x `heads` heads, each
// (Tq, Tk): a head view (tokens in two columns, a line per query-key pair
// whose opacity is the weight; hover a token to isolate its row or column),
// a model view (every layer x head as a thumbnail with its entropy, sink share
// and a one-line note; click to enlarge) and a matrix view (hover a cell for
// the query and key tokens, score, weight and mask status; colour scale
// absolute, per row or log; with value norms, the norm-based view ||a_ij v_j||).
//
// The page makes no network request: a Content-Security-Policy meta forbids
// every fetch, and its script and style run by their SHA-256 hashes only (no
// 'unsafe-inline'), so markup smuggled into a token could not run even if it
// reached the DOM. It does not: every string (tokens, titles, notes) travels in
// a JSON data block with <, >, & and U+2028/9 written as \u escapes, and the
// script inserts it with textContent.
//
// Data is stored compactly, base64 in the JSON: float16 (relative error <=
// 2^-11) while the page holds at most kHtmlF16Values weights, else 8 bits on a
// square-root scale (w = (q/255)^2, absolute error <= 1/255 near w = 1, finer
// for small weights). The largest error of the weights actually embedded is
// measured and printed in the page (HtmlStats::max_weight_error). Each head's
// weights (and scores) sit in their own base64 data element, which the script
// decodes only when that head is shown; the model view draws from thumbnails
// max-pooled here (at most 64 x 64 cells a head, 8-bit square-root scale), so
// BERT-base's 12 x 12 heads at T = 512 (a 50 MB page) open without decoding them.
//
// Legend: L = layers, H = heads, Tq = queries, Tk = keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

// Up to this many weights (L*H*Tq*Tk) are stored as float16; beyond, 8 bits.
constexpr int64_t kHtmlF16Values = int64_t{1} << 19;
// Scores (for the hover) are embedded, as float16, only up to this many values.
constexpr int64_t kHtmlScoreValues = int64_t{1} << 19;

struct AttentionPage {
    std::string title;     // "Attention weights of all-MiniLM-L6-v2"
    std::string subtitle;  // the text, or the run's configuration
    std::string source;    // the file or command it came from (shown as text)
    std::string lang = "en";  // UI language: "en" or "zh"
    int64_t layers = 1, heads = 1, tq = 0, tk = 0;
    // Batch rows (a selector on the page when > 1): every vector below indexed by layer then holds
    // the B rows one after another (weights [B, L, H, Tq, Tk], allowed [B, Tq, Tk] or [B, H, Tq, Tk],
    // value_norms [B, L, H, Tk], head_notes B * L * H); the tokens are the same for every row.
    int64_t batches = 1;
    std::vector<std::string> q_tokens, k_tokens;  // [Tq], [Tk]; empty: positions
    std::vector<float> weights;                   // [L, H, Tq, Tk]
    std::vector<float> scores;                    // optional [L, H, Tq, Tk] scaled, masked scores (-inf allowed)
    // optional: 1 = the query may attend to the key; [Tq, Tk] for every head, or [H, Tq, Tk]
    std::vector<uint8_t> allowed;
    std::vector<float> value_norms;               // optional [L, H, Tk]: ||v_j|| of each head's value vectors
    std::vector<std::string> head_notes;          // optional [L * H]: a one-line summary per head
    std::vector<std::pair<std::string, std::string>> shapes;  // ("weights", "[1, 4, 8, 8]"), as the terminal prints
};

// What attention_html embedded, for the command's one-line report and the tests.
struct HtmlStats {
    std::string encoding;         // "float16" or "8-bit sqrt"
    double max_weight_error = 0;  // max |decoded - original| over the embedded weights
    bool scores_embedded = false;
    int64_t bytes = 0;            // size of the page
};

// Per head: the mean entropy of its rows normalised by the log of the allowed
// keys (1 uniform, 0 one-hot) and its sink share, the mean weight the single
// key that receives the most gets (an "attention sink" when near 1), and that key.
struct HtmlHeadFigures {
    double entropy = 0, sink_share = 0;
    int64_t sink_key = 0;
};
std::vector<HtmlHeadFigures> html_head_figures(const AttentionPage& page);

// Throws std::invalid_argument when the sizes of the vectors do not match.
std::string attention_html(const AttentionPage& page, HtmlStats* stats = nullptr);

// The CSP sources of the page's script and style ("'sha256-...'"), for a page
// that embeds attention pages (iframe srcdoc inherits the embedder's policy).
std::string attention_html_script_source();
std::string attention_html_style_source();

// A JSON string literal ("...") that is safe inside an HTML <script> element:
// ", \ and control characters escaped as JSON requires, and also <, >, &, ',
// U+2028 and U+2029 as \uXXXX, so no "</script>" or "<!--" can appear.
// Bytes that are not UTF-8 become U+FFFD.
std::string html_json_string(std::string_view s);

// Lowercase hex SHA-256 and its base64 (for CSP hashes); sha256 of "abc" is ba7816bf...
std::string sha256_base64(std::string_view data);
std::string base64_encode(const uint8_t* data, size_t n);

// IEEE half precision, round to nearest even; infinities and NaN kept.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);

}  // namespace attn
