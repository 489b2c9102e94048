// Chinese text of lesson 16 (lessons/16_backward.cpp). Keys: the lesson's
// English exactly; {0}, {1}: the English template's arguments in order.
#include "catalogue.hpp"

namespace attn::lessons {
namespace {
const RegisterCatalogue zh16{Lang::zh, 16, {
    {"What the backward pass must produce", "反向传播要算出什么"},
    {"Training needs, for every input of attention, how the loss changes when that input moves. The forward "
     "pass is S = f·Q·Kᵀ (f = 1/√d_k), P = softmax(S) row by row, O = P·V. The layer above hands back "
     "dO = ∂L/∂O, one row per query, and the backward pass turns it into dQ, dK and dV, running the forward "
     "steps in reverse. We take one head, T = 4 tokens, d_k = 3, d_v = 2, random Q, K, V, and a random dO.",
     "训练需要知道：注意力的每个输入变动时，损失会怎样变化。前向传播是 S = f·Q·Kᵀ（f = 1/√d_k），"
     "逐行做 P = softmax(S)，再算 O = P·V。上一层传回 dO = ∂L/∂O，每个查询一行；反向传播把它变成 "
     "dQ、dK 和 dV，按相反的顺序走过前向的各步。我们取一个头，T = 4 个 token，d_k = 3，d_v = 2，"
     "Q、K、V 随机，dO 也随机。"},
    {"softmax(f·Q·Kᵀ), saved by the forward pass for the backward",
     "softmax(f·Q·Kᵀ)，由前向传播保存下来供反向传播使用"},
    {"from the layer above, same shape as O", "来自上一层，形状与 O 相同"},
    {"Through the product O = P·V", "经过乘积 O = P·V"},
    {"O = P·V is a matrix product, so its gradient is two more: dV = Pᵀ·dO (each value collects dO from every "
     "query, weighted by how much that query used it) and dP = dO·Vᵀ (how much the loss would change if query i "
     "gave key j a little more weight: the match between what i should output and v_j).",
     "O = P·V 是一个矩阵乘积，所以它的梯度是另外两个矩阵乘积：dV = Pᵀ·dO（每个值从所有查询那里收集 dO，"
     "按该查询用了它多少来加权）；dP = dO·Vᵀ（查询 i 给键 j 多一点权重时损失会变化多少："
     "即 i 应当输出的内容与 v_j 的匹配程度）。"},
    {"dV = Pᵀ·dO    (4×4)ᵀ·(4×2) → 4×2, the shape of V\n"
     "dP = dO·Vᵀ    (4×2)·(2×4)   → 4×4, the shape of P",
     "dV = Pᵀ·dO    (4×4)ᵀ·(4×2) → 4×2，即 V 的形状\n"
     "dP = dO·Vᵀ    (4×2)·(2×4)   → 4×4，即 P 的形状"},
    {"Through the softmax", "经过 softmax"},
    {"Each row of P is a softmax of its row of S, and the softmax Jacobian is J = diag(p) − p·pᵀ (lesson 4). "
     "Multiplying a row of dP by it gives dS = P∘(dP − rowsum(P∘dP)): each score's gradient is its weight "
     "times how much better than the row's weighted average its key would be. A row of dS sums to zero, "
     "because adding a constant to every score of a row changes nothing.",
     "P 的每一行是 S 对应行的 softmax，而 softmax 的雅可比矩阵是 J = diag(p) − p·pᵀ（第 4 课）。"
     "用它乘 dP 的一行，得到 dS = P∘(dP − rowsum(P∘dP))：每个分数的梯度等于它的权重，"
     "乘以它的键比这一行的加权平均好多少。dS 的每一行之和为零，因为给一行的每个分数都加上同一个常数，"
     "什么也不会改变。"},
    {"P∘(dP − rowsum(P∘dP)), the shape of S", "P∘(dP − rowsum(P∘dP))，即 S 的形状"},
    {"every row of dS sums to 0 (largest |row sum| {})", "dS 的每一行之和都为 0（最大 |行和| {0}）"},
    {"each row of dS is lesson 4's Jacobian J = diag(p) − p·pᵀ times that row of dP (largest "
     "difference {}, J built from the weights in float)",
     "dS 的每一行都等于第 4 课的雅可比矩阵 J = diag(p) − p·pᵀ 乘以 dP 的对应行"
     "（最大差 {0}，J 由 float 精度的权重构造）"},
    {"Through the scores S = f·Q·Kᵀ", "经过分数 S = f·Q·Kᵀ"},
    {"The last product gives dQ = f·dS·K and dK = f·dSᵀ·Q: a query moves toward the keys whose scores should "
     "rise, a key toward the queries that want it more.",
     "最后一个乘积给出 dQ = f·dS·K 和 dK = f·dSᵀ·Q：查询朝着分数应当升高的那些键移动，"
     "键朝着更需要它的那些查询移动。"},
    {"the steps above equal core's reference backward (attention_backward.hpp) to {} in double",
     "上面各步与核心库的参考反向传播（attention_backward.hpp）在 double 精度下一致，相差不超过 {0}"},
    {"gradient", "梯度"},
    {"norm", "范数"},
    {"largest |entry|", "最大 |元素|"},
    {"every entry of dQ, dK, dV matches central finite differences (h = 1e-6) of L = Σ O∘dO to {} "
     "(entries up to {})",
     "dQ、dK、dV 的每个元素都与 L = Σ O∘dO 的中心有限差分（h = 1e-6）一致，相差不超过 {0}"
     "（元素最大为 {1}）"},
    {"A saturated row passes almost no gradient", "饱和的行几乎传不回梯度"},
    {"Scale the queries by c: the scores grow, every row of P sharpens toward one-hot, and dP = dO·Vᵀ does not "
     "change at all (it has no Q in it). Yet dS = P∘(dP − rowsum(P∘dP)) shrinks: where p ≈ 1 the bracket "
     "is ≈ 0, and everywhere else p ≈ 0. It is lesson 4's Jacobian again, whose norm vanishes as the row "
     "saturates, and it is why a row locked onto one key early is barely moved by the gradient (C13; "
     "attn experiment lock-in measures it in training).",
     "把查询乘以 c：分数变大，P 的每一行都向 one-hot 变尖锐，而 dP = dO·Vᵀ 完全不变（其中没有 Q）。"
     "可是 dS = P∘(dP − rowsum(P∘dP)) 缩小了：p ≈ 1 的地方括号里 ≈ 0，其余地方 p ≈ 0。"
     "这又是第 4 课的雅可比矩阵，一行饱和时它的范数趋于零；这也正是为什么一行早早锁死在某个键上之后，"
     "梯度几乎推不动它（C13；attn experiment lock-in 在训练中测量这一点）。"},
    {"We follow row {}, the one whose two largest scores are farthest apart at c = 1 ({:.2f}): scaling "
     "Q by c scales that gap by c, so it is the row that saturates first.",
     "我们跟踪第 {0} 行：c = 1 时，它最大的两个分数相差最远（{1:.2f}）。把 Q 乘以 c，这个差距也乘以 c，"
     "所以它是最先饱和的一行。"},
    {"max weight of the row", "该行最大权重"},
    {"‖dP row‖", "‖dP 行‖"},
    {"‖dS row‖", "‖dS 行‖"},
    {"‖J‖_F of the row", "该行的 ‖J‖_F"},
    {"‖dQ row‖", "‖dQ 行‖"},
    {"dP = dO·Vᵀ is the same at every c: the upstream signal did not weaken",
     "dP = dO·Vᵀ 在每个 c 下都相同：上游传来的信号并没有减弱"},
    {"at c = 30 the gradient reaching the row's scores is {} of its size at c = 1 ({} vs {})",
     "c = 30 时，到达该行分数的梯度只有 c = 1 时的 {0}（{1} 对比 {2}）"},
}};
}  // namespace
}  // namespace attn::lessons
