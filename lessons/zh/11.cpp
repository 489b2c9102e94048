// Chinese text of lesson 11 (lessons/11_head_entropy.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh11{Lang::zh, 11, {
    {"Mean entropy per head", "每个头的平均熵"},
    {"Heads are not told to specialise; often several end up doing the same thing. The source's "
     "diagnosis: save each head's weights and compare their mean entropy. Entropy H = −Σ p log p "
     "measures how spread a row is: log T for uniform (every key equally), 0 for one-hot. We "
     "normalise by log T so 1 = uniform. Effective keys = e^H: how many keys a row really uses.",
     "没有谁规定各个头要分工；常常有几个头最后做的是同一件事。原文给出的诊断方法是：保存每个头的权重，"
     "比较它们的平均熵。熵 H = −Σ p log p 衡量一行权重分散的程度：均匀分布（每个键分到的一样多）时为 log T，"
     "one-hot 时为 0。我们除以 log T 做归一化，于是 1 = 均匀。有效键数 = e^H：一行实际用到了多少个键。"},
    {"The layer has random weights drawn N(0, 0.3²), except that head 1 is given head 0's query and "
     "key weights: a planted duplicate the diagnosis should find.",
     "这一层的权重随机抽取自 N(0, 0.3²)，唯一的例外是头 1 被赋予了头 0 的查询权重和键权重："
     "这是预先埋入的重复头，诊断应当把它找出来。"},
    {"head", "头"},
    {"mean entropy (nats)", "平均熵（nats）"},
    {"normalised", "归一化"},
    {"mean max weight", "平均最大权重"},
    {"effective keys", "有效键数"},
    {"every head's mean entropy lies in [0, log T = {:.3f}] nats",
     "每个头的平均熵都在 [0, log T = {0:.3f}] nats 之内"},
    {"the planted duplicate has the same mean entropy as head 0 ({:.4f} vs {:.4f})",
     "埋入的重复头与头 0 的平均熵相同（{0:.4f} 对比 {1:.4f}）"},
    {"Head-to-head similarity", "头与头之间的相似度"},
    {"Equal mean entropy does not prove two heads look at the same keys; two heads can be "
     "equally sharp about different things. A direct comparison: the Jensen-Shannon divergence "
     "between the two heads' rows, averaged over all queries. 0 means identical rows; ln 2 = "
     "{:.3f} nats is the maximum (disjoint).",
     "平均熵相等并不能证明两个头看的是同一些键：两个头可以对不同的东西同样尖锐。更直接的比较是："
     "两个头对应行之间的 Jensen-Shannon 散度，再对所有查询取平均。0 表示两行完全相同；"
     "ln 2 = {0:.3f} nats 是最大值（两者毫无重叠）。"},
    {"similarity", "相似度"},
    {"[H, H], mean JS divergence (nats)", "[H, H]，平均 JS 散度（nats）"},
    {"mean JS divergence between heads (0 = identical)", "头与头之间的平均 JS 散度（0 = 完全相同）"},
    {"Median divergence between heads: {:.4f} nats. Flagged as near-duplicates (below a "
     "tenth of the median, {:.4f}): {}",
     "头与头之间散度的中位数：{0:.4f} nats。被标为近似重复的头对（低于中位数的十分之一，即 {1:.4f}）：{2}"},
    {"none", "无"},
    {"the closest pair is (h{}, h{}), the planted duplicate, and it is the only one flagged",
     "最接近的一对是 (h{0}, h{1})，正是埋入的重复头，而且只有它被标了出来"},
    {"head 0, batch 0", "头 0，批次 0"},
    {"head 2, batch 0", "头 2，批次 0"},
    {"What random weights can and cannot show", "随机权重能说明什么，不能说明什么"},
    {"Everything above is a tool test on an untrained layer. Random heads differ from one another "
     "only by chance, so their entropies and divergences say nothing about what trained heads do: "
     "whether real heads homogenise, and how many, can only be measured on a trained model's weights "
     "(the 'Real heads' lesson, where a pretrained model is available, does that). What this lesson "
     "does show: the diagnosis works. A duplicate head is found, at (near) zero divergence, and "
     "mean entropy alone would not have told it apart from any other head of similar sharpness.",
     "以上都是在未经训练的层上检验工具本身。随机的头彼此之间的差异纯属偶然，所以它们的熵和散度"
     "说明不了训练后的头会怎样：真实模型的头是否会同质化、有多少个头同质化，只能在训练好的模型权重上测量"
     "（有预训练模型可用时，“真实模型的注意力头”一课会做这件事）。本课确实说明了的是：这套诊断方法管用。"
     "重复的头被找了出来，散度为零（或接近零）；而单看平均熵，无法把它与其他尖锐程度相近的头区分开。"},
    {"\"heads often homogenise\" in trained models: not measurable with random weights here; "
     "attn experiment heads trains 1x64, 4x16 and 8x8 heads and counts near-identical pairs.",
     "训练好的模型里“头常常同质化”：用这里的随机权重无法测量；attn experiment heads 会训练 1x64、4x16 "
     "和 8x8 三种配置的头，并统计几乎相同的头对。"},
    // the statement of `attn experiment heads` on C32 (its figures stay as the experiment prints them)
    {"heads do not automatically specialise; several learn near-identical patterns",
     "各头不会自动分工；有几个头学到了几乎相同的模式"},
    {"heads do not automatically specialise; several learn near-identical patterns (adamw)",
     "各头不会自动分工；有几个头学到了几乎相同的模式（adamw）"},
    // attn experiment heads' readable C32 verdict (lib/experiments/src/exp_heads.cpp)
    {"associative recall with 4 key-value pairs per row, which takes two attention patterns, learned by a 2-layer "
     "model whose heads share a width of 64 (1 head of 64, 4 of 16, 8 of 8); the metric is how alike each layer's "
     "heads end up: the Jensen-Shannon divergence (JS, in nats: 0 for identical patterns) between every pair of heads, "
     "and the pairs below 0.05 nats, called near-identical",
     "关联回忆，每行 4 个键值对，需要两种注意力模式；由一个 2 层模型学习，各头共享 64 的总宽度（1 个 64 宽的头、4 个 16 宽、8 个 8 宽）；指标是每层各头最终有多相似：每对头之间的 "
     "Jensen-Shannon 散度（JS，单位奈特：模式相同时为 0），以及低于 0.05 奈特、称为几乎相同的头对"},
    {"heads x width", "头数 × 宽度"},
    {"near-identical pairs", "几乎相同的头对"},
    {"layer 0 JS at step 0", "第 0 层第 0 步的 JS"},
    {"at the end", "训练结束时"},
    {"none of the {} head pairs ends near-identical, and the heads' patterns drift apart while training (layer 0 of 8 "
     "x 8: JS {} at step 0, {} at the end): at this scale the heads specialise",
     "{0} 对头中没有一对最终几乎相同，而且训练中各头的模式越分越开（8 × 8 的第 0 层：第 0 步 JS 为 {1}，结束时为 {2}）：在这个规模下各头会分化"},
    {"{} head pairs end near-identical (layer 0 of 8 x 8: JS {} at step 0, {} at the end)",
     "有 {0} 对头最终几乎相同（8 × 8 的第 0 层：第 0 步 JS 为 {1}，结束时为 {2}）"},
}};
}  // namespace
}  // namespace attn::lessons
