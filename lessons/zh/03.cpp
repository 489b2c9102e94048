// Chinese text of lesson 3 (lessons/03_dot_product.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh03{Lang::zh, 3, {
    {"score = |q| |k| cos θ", "分数 = |q| |k| cos θ"},
    {"The score of a query against a key is their dot product. Geometry splits it into three "
     "factors: the two lengths and the cosine of the angle between them. The cosine is the part that "
     "means \"pointing the same way\"; the lengths multiply it.",
     "查询对某个键的分数就是两者的点积。从几何上看，它可以拆成三个因子：两个向量的长度，以及两者夹角的余弦。"
     "余弦那部分表示“指向同一方向”的程度，长度则把它成倍放大。"},
    {"q·kᵀ (no scaling here)", "q·kᵀ（这里不缩放）"},
    {"the library's score equals |q||k|cos θ (diff {})", "库算出的分数等于 |q||k|cos θ（差 {0}）"},
    {"Longer vectors, bigger scores", "向量越长，分数越大"},
    {"Stretch the key by a factor c: the angle does not move, yet the score grows by c. A token whose "
     "key happens to be long wins attention from every query that points roughly its way.",
     "把键拉长 c 倍：夹角不变，分数却增大 c 倍。一个 token 的键如果恰好很长，"
     "那么所有大致指向它的查询都会把注意力给它。"},
    {"score q·k", "分数 q·k"},
    {"4 × k gives 4 × the score ({} vs 4 × {}), same cos θ", "4 × k 给出 4 × 的分数（{0} 对比 4 × {1}），cos θ 不变"},
    {"A long key can beat a well-aligned one", "长的键可以胜过方向更一致的键"},
    {"Two keys compete for one query. k_near is 15° away from q's direction, with length 1; "
     "k_far is 60° away, with length 4. The one with the higher cosine is not the one that gets the "
     "weight.",
     "两个键争夺同一个查询。k_near 与 q 的方向相差 15°，长度为 1；k_far 相差 60°，长度为 4。"
     "余弦更高的那个，并不是拿到权重的那个。"},
    {"keys", "键"},
    {"k_near, k_far", "k_near, k_far"},
    {"k_near", "k_near"},
    {"k_far", "k_far"},
    {"cos θ", "cos θ"},
    {"score/√Dk", "分数/√Dk"},
    {"k_near has the higher cosine ({:.3f} > {:.3f}) but k_far gets the weight ({:.3f} > {:.3f})",
     "k_near 的余弦更高（{0:.3f} > {1:.3f}），权重却归 k_far（{2:.3f} > {3:.3f}）"},
    {"That outcome was built in: the two keys were constructed at those angles and lengths, so the "
     "check shows the arithmetic (4·cos 60° = 2 > cos 15° ≈ 0.97) rather than measuring anything. "
     "Whether that is a bug or a feature is lesson 6's question: length can carry meaning (a strong "
     "token), and cosine similarity throws it away.",
     "这个结果是预先设计好的：两个键就是按这样的角度和长度构造的，所以这项检查展示的是算术"
     "（4·cos 60° = 2 > cos 15° ≈ 0.97），而不是测量。这究竟是缺陷还是特性，是第 6 课要讨论的问题："
     "长度可能携带语义（一个“强”token），而余弦相似度把它丢掉了。"},
}};
}  // namespace
}  // namespace attn::lessons
