// app/serve_pages.cpp: the skeletons of the lab's pages; app/serve/lab.js fills them.
#include "serve_pages.hpp"

#include <fmt/format.h>

#include "serve_exercise.hpp"
#include "serve_lab.hpp"

namespace attn::cli {

extern const char* const kLabScript;  // app/serve/lab.js
extern const char* const kLabStyle;   // app/serve/lab.css

namespace {

struct PageText {
    const char* title;
    const char* lead;
};

// Title and one-paragraph introduction of each page, in English and Chinese.
PageText page_text(const std::string& page, bool zh) {
    if (page == "playground")
        return zh ? PageText{"注意力操场",
                             "一层多头自注意力：x [1, T, D] 经过 nn.Linear 得到 Q、K、V，分数 Q·Kᵀ 乘以缩放因子，"
                             "掩码位置填 −∞，再按行做 softmax。拖动旋钮，C++ 库立即重新计算；悬停查看每个数。"}
                  : PageText{"Attention playground",
                             "One multi-head self-attention layer: x [1, T, D] goes through nn.Linear to Q, K and V; "
                             "the scores Q·Kᵀ are scaled, masked keys filled with −∞, and each row goes through "
                             "softmax. Move a knob and attn's C++ library computes it again; hover a cell for its "
                             "number."};
    if (page == "sqrt-dk")
        return zh ? PageText{"为什么除以 √Dk",
                             "q 和 k 的分量独立、方差为 1 时，q·k 的标准差是 √Dk：Dk 越大，分数越分散，softmax 越接近 "
                             "one-hot，"
                             "经过 softmax 的梯度越小。除以 √Dk 把标准差拉回 1。拖动 Dk，看方差实验实时重跑。"}
                  : PageText{"Why divide by √Dk",
                             "With independent unit-variance components, q·k has standard deviation √Dk: the larger "
                             "Dk, the wider the scores, the closer softmax gets to one-hot and the less gradient "
                             "flows back through it. Dividing by √Dk brings the std back to 1. Move Dk and the "
                             "variance experiment runs again."};
    if (page == "sentence")
        return zh ? PageText{"你的句子",
                             "输入一句英文，all-MiniLM-L6-v2 的 6 层 × 12 个头的注意力由 attn 的 C++ "
                             "编码器计算后显示：头视图、"
                             "模型视图、矩阵视图。"}
                  : PageText{"Your sentence",
                             "Type a sentence: all-MiniLM-L6-v2's 6 layers × 12 heads, computed by attn's C++ "
                             "encoder, in the head, model and matrix views."};
    if (page == "decoder")
        return zh ? PageText{"解码器：下一个词元",
                             "输入一段开头，GPT-2 式解码器（默认是随 attn 发布、在《麦克白》上训练的字符级模型）"
                             "把它切成词元，给出嵌入、每一层的残差流和注意力头、logit lens，"
                             "以及下一个词元的概率分布（温度、top-k、top-p）；数字与 attn model next 和 "
                             "attn model cache 相同。"}
                  : PageText{"Decoder: the next token",
                             "Type a prompt: a GPT-2-family decoder (by default the character-level one attn ships, "
                             "trained on Macbeth) splits it into tokens; see their embeddings, every layer's "
                             "residual stream and heads, the logit lens and the distribution of the next token "
                             "(temperature, top-k, top-p), the numbers of attn model next and attn model cache."};
    if (page == "exercise")
        return zh ? PageText{"练习：自己写注意力",
                             "选一个练习（即 attn exercise 的练习），下载它的输入（inputs.npz），用 numpy 算出答案，"
                             "上传 .npy 或 .npz：逐阶段比较参考实现，找出第一个出错的阶段并诊断常见错误，"
                             "结果与 attn exercise N --check 相同。"}
                  : PageText{"Exercises: write attention yourself",
                             "Pick an exercise (those of attn exercise), download its inputs (inputs.npz), compute the "
                             "answer with numpy and upload it as .npy or .npz: it is compared with the reference, the "
                             "first stage that diverges is named and the known mistakes are tried, the same result "
                             "attn exercise N --check gives."};
    if (page == "train")
        return zh ? PageText{"训练一个小模型",
                             "在一个合成任务上训练 attn train 的小 Transformer（2 层、4 个头），实时看损失下降，"
                             "以及最后一层某个头的注意力权重如何形成。"}
                  : PageText{"Train a tiny model",
                             "Train attn train's tiny Transformer (2 layers, 4 heads) on a synthetic task and watch "
                             "the loss fall and a head of the last layer find its pattern, step by step."};
    return zh ? PageText{"attn 实验室", "每个数字都由 attn 的 C++ 库在这台机器上计算；页面不向别处发送任何请求。"}
              : PageText{"attn lab", "Every number on these pages is computed by attn's C++ library on this "
                                     "machine; no page sends a request anywhere else."};
}

}  // namespace

const std::vector<PageAsset>& page_assets() {
    static const std::vector<PageAsset> assets = {
        {"/", "text/html; charset=utf-8", true, "", nullptr},
        {"/playground", "text/html; charset=utf-8", true, "playground", nullptr},
        {"/sqrt-dk", "text/html; charset=utf-8", true, "sqrt-dk", nullptr},
        {"/sentence", "text/html; charset=utf-8", true, "sentence", nullptr},
        {"/train", "text/html; charset=utf-8", true, "train", nullptr},
        {"/decoder", "text/html; charset=utf-8", true, "decoder", nullptr},
        {"/exercise", "text/html; charset=utf-8", true, "exercise", nullptr},
        {"/static/lab\\.js", "text/javascript; charset=utf-8", false, "", kLabScript},
        {"/static/lab\\.css", "text/css; charset=utf-8", false, "", kLabStyle},
    };
    return assets;
}

std::string page_html(const PageAsset& a, const std::string& lang) {
    const bool zh = lang == "zh";
    const std::string page = a.page;
    const PageText text = page_text(page, zh);
    std::string nav;
    for (const char* p : {"playground", "sqrt-dk", "sentence", "train", "decoder", "exercise"}) {
        const PageText pt = page_text(p, zh);
        nav += fmt::format("<a href=\"/{}?lang={}\"{}>{}</a>", p, lang, page == p ? " class=\"here\"" : "", pt.title);
    }
    std::string body;
    if (page.empty()) {
        body = "<ul class=\"pages\">";
        for (const char* p : {"playground", "sqrt-dk", "sentence", "train", "decoder", "exercise"}) {
            const PageText pt = page_text(p, zh);
            body += fmt::format("<li><a href=\"/{}?lang={}\">{}</a>: {}</li>", p, lang, pt.title, pt.lead);
        }
        body += "</ul>";
    } else {
        body = "<div class=\"knobs\" id=\"knobs\"></div><div class=\"status\" id=\"status\"></div>"
               "<code class=\"cmd\" id=\"command\"></code><table class=\"shapes\" id=\"shapes\"></table>"
               "<div class=\"grid\" id=\"grid\"></div>";
    }
    return fmt::format(
        "<!doctype html>\n<html lang=\"{}\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
        "content=\"width=device-width, initial-scale=1\"><title>{} · attn</title>"
        "<link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"/static/lab.css\"></head>\n"
        "<body data-page=\"{}\" data-max-text=\"{}\" data-max-answer=\"{}\"><header><b><a href=\"/?lang={}\">"
        "attn lab</a></b>{}</header><main><h1>{}</h1><p class=\"lead\">{}</p>{}</main>"
        "<script src=\"/static/lab.js\"></script></body></html>\n",
        zh ? "zh" : "en", text.title, page, kLabMaxTextBytes, kLabMaxAnswerBytes, lang, nav, text.title, text.lead,
        body);
}

}  // namespace attn::cli
