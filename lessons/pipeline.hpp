// lessons/pipeline.hpp: the Transformer block as one picture, and where each lesson sits in it.
//
// The steps a decoder block takes, in order (lesson 10's last section computes every one
// of them on a trained model):
//   tokens -> embed + pos -> LN1 -> Q, K, V -> Q·Kᵀ -> ÷√Dk -> mask -> softmax -> dropout
//   -> ·V -> merge heads -> W_o -> + x -> LN2 -> FFN -> + x -> LN_f·head (logits)
// Each lesson names the steps it zooms into (lesson_steps); pipeline_svg draws the
// block with those steps highlighted: the HTML pages of `attn tour --html` and
// `attn lesson --html` open each lesson with it, and `attn lessons --svg FILE` draws the
// whole block with the lessons that explain each step.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalogue.hpp"

namespace attn::lessons {

struct PipelineStep {
    const char* id;     // "softmax"
    const char* label;  // "softmax" (English; the zh label below)
    const char* label_zh;
    const char* shape;  // "[B, H, T, T]": the tensor the step produces
};

// The steps of a block, in order.
const std::vector<PipelineStep>& pipeline_steps();

// The ids of the steps lesson `slug` explains (at least one for every lesson; a test
// checks it); empty for an unknown slug.
std::vector<std::string> lesson_steps(std::string_view slug);

// The block as an SVG document: the steps in two rows, those in `highlight` filled.
// notes: one line under each step (its index in pipeline_steps()), empty for none.
std::string pipeline_svg(const std::vector<std::string>& highlight, std::string_view title, Lang lang,
                         const std::vector<std::string>& notes = {});

}  // namespace attn::lessons
