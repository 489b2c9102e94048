// lib/cpu/src/train_attention/attention_knobs.cpp: the names of the variant attention's knobs
// (attn/cpu/attention_knobs.hpp), as the experiments and the checkpoints print them.
#include "attn/cpu/attention_knobs.hpp"

namespace attn {

const char* attn_bug_name(AttnBug b) {
    switch (b) {
        case AttnBug::None: return "none";
        case AttnBug::NoScale: return "no-scale";
        case AttnBug::TransposedScores: return "k-q-transposed";
        case AttnBug::HeadMerge: return "head-merge";
        case AttnBug::InvertedMask: return "inverted-mask";
        case AttnBug::FillZero: return "fill-zero";
        case AttnBug::QuerySideMask: return "query-side-mask";
    }
    return "?";
}

const char* attn_kind_name(AttnKind k) {
    switch (k) {
        case AttnKind::Softmax: return "softmax";
        case AttnKind::Window: return "window";
        case AttnKind::Strided: return "strided";
        case AttnKind::GlobalLocal: return "global+local";
        case AttnKind::EluPlusOne: return "elu+1";
        case AttnKind::Favor: return "favor+";
        case AttnKind::CosFormer: return "cosformer";
    }
    return "?";
}

bool attn_kind_linear(AttnKind k) {
    return k == AttnKind::EluPlusOne || k == AttnKind::Favor || k == AttnKind::CosFormer;
}

}  // namespace attn
