// attn/attn.hpp: the attention pipeline in one include (core, the CPU kernels,
// the backend table and multi-head attention, the dump format). The model,
// visualisation and experiment modules have their own headers.
#pragma once
#include "attn/core/attention.hpp"
#include "attn/core/cost.hpp"
#include "attn/core/errors.hpp"
#include "attn/core/init.hpp"
#include "attn/core/linear.hpp"
#include "attn/core/mask.hpp"
#include "attn/core/parallel.hpp"
#include "attn/core/rng.hpp"
#include "attn/core/stats.hpp"
#include "attn/core/tensor.hpp"
#include "attn/core/utf8.hpp"
#include "attn/cpu/flash.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/npy.hpp"
#include "attn/nn/backend.hpp"
#include "attn/nn/mha.hpp"
#include "attn/nn/kv_cache.hpp"
