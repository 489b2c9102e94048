// tests/latin_words.hpp: the English words left in a Chinese text.
//
// The Chinese tour may keep Latin letters only where they are not English prose:
//   - code and commands: `backtick spans`, `attn ...` command lines, lines of
//     code or program output (indented, starting with "->" or a call), paths;
//   - quotations: “...” and "..." (the source's own sentences, quoted words);
//   - shapes and tokens in brackets: [out, in], [CLS], <pad>;
//   - identifiers: a word with an underscore, a digit or an inner capital (W_q,
//     d_model, RoPE, FLOPs), and names written all in capitals (GQA, BERT);
//   - units, formula letters and the terms below (the source's own vocabulary,
//     names of people, libraries and functions);
//   - the words of the lessons' example sentences, which are data.
// Everything else is an untranslated word; latin_words lists each once with
// the line it first appears on.
#pragma once

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace attn::test {

inline const std::set<std::string>& latin_whitelist() {
    static const std::set<std::string> words{
        // the source's terms and the names of what the lessons compute
        "token", "tokens", "softmax", "Softmax", "one-hot", "dropout", "logits", "nats", "nat", "flash", "elu",
        "favor", "cosformer", "Performer", "Transformer", "Linear", "strided", "window", "global+local", "pad",
        "keep", "mask", "rope", "alibi", "adamw", "Adam", "AdamW", "sentence-transformers", "safetensors",
        "transformers", "tensor", "inf", "chance", "acc", "scale", "head", "heads", "dout", "merged", "rowsum",
        "perm", "diff", "fill", "seq", "dim", "kdim", "vdim", "dtype", "float", "double", "ones", "diag",
        "diagonal", "out", "sum", "min", "max", "exp", "log", "cos", "sin", "sqrt", "True", "False", "true",
        "false", "train", "forward", "backward", "experiment", "quick", "tour", "split", "text", "dict", "fan-in",
        "ids", "pos",
        // functions and methods named in the text (torch and numpy spellings)
        "matmul", "bmm", "transpose", "reshape", "unsqueeze", "argmax", "view", "contiguous", "triu", "torch",
        // people, libraries, models
        "Xavier", "Kaiming", "Jensen", "Shannon", "Frobenius", "Kobayashi", "Vaswani", "Llama", "Python", "PyTorch",
        "WordPiece", "MiniLM", "attn",
        // the example sentences (data): "the cat sat on the mat", "we like green tea now", "the tea is hot",
        // "The animal didn't cross the street because it was too tired/wide"
        "the", "The", "cat", "sat", "mat", "like", "green", "tea", "now", "hot", "animal", "didn", "cross",
        "street", "because", "was", "too", "tired", "wide"};
    return words;
}

// word -> the first line it appears on
inline std::map<std::string, std::string> latin_words(const std::string& text) {
    // spans that may hold any Latin text, removed over the whole text (a span may wrap)
    static const std::regex spans(
        "`[^`]*`"                       // code spans
        "|\u201c[^\u201d]*\u201d"       // “quotations”
        "|\"[^\"\\n]*\""                // "quoted words"
        "|\\[[^\\]\\n]*\\]|<[^>\\n]*>"  // [shapes], [CLS], <pad>
        "|\\battn([ \\n]+[-A-Za-z0-9_.,=/+|]+)*"  // a command (it may wrap): attn experiment length --quick
        "|[A-Za-z_]+::[A-Za-z_:]+"                  // a C++ name: Mask::sliding_window
        "|[A-Za-z0-9_.-]*/[A-Za-z0-9_./-]+"  // a path: data/macbeth.txt, attn/nn/ops.hpp
        "|[A-Za-z_][A-Za-z0-9_.]*\\("        // a call: torch.triu(, .view(
        "|\\.[A-Za-z_]+\\b"                  // a method or an extension: .contiguous, .txt
    );
    static const std::regex code_line("^ {4,}(->|[A-Za-z_][A-Za-z0-9_:.]*\\().*$");
    static const std::regex word("[A-Za-z][A-Za-z0-9_'+-]*[A-Za-z0-9+]|[A-Za-z]");
    static const std::regex identifier("[^_0-9]*[_0-9].*|.[a-z]*[A-Z].*|[A-Z]+");
    std::string cleaned;
    {
        std::istringstream in(text);
        std::string line;
        while (std::getline(in, line)) cleaned += (std::regex_match(line, code_line) ? std::string() : line) + "\n";
    }
    cleaned = std::regex_replace(cleaned, spans, " ");
    std::map<std::string, std::string> found;
    std::istringstream in(cleaned);
    std::string line;
    while (std::getline(in, line)) {
        for (auto it = std::sregex_iterator(line.begin(), line.end(), word); it != std::sregex_iterator(); ++it) {
            const std::string w = it->str();
            if (w.size() < 3) continue;  // formula letters and units: T, Dk, nn, ln, ms
            if (std::regex_match(w, identifier) || latin_whitelist().count(w)) continue;
            if (w.find('-') != std::string::npos || w.find('+') != std::string::npos) {
                // a compound is allowed when each of its parts is
                bool all = true;
                std::istringstream parts(std::regex_replace(w, std::regex("[-+]"), " "));
                std::string p;
                while (parts >> p)
                    all = all && (p.size() < 3 || std::regex_match(p, identifier) || latin_whitelist().count(p) > 0);
                if (all) continue;
            }
            found.emplace(w, line);
        }
    }
    return found;
}

inline std::string latin_report(const std::map<std::string, std::string>& found) {
    std::string s;
    for (const auto& [w, line] : found) s += "\n  " + w + "    in: " + line;
    return s;
}

}  // namespace attn::test
