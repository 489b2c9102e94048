// attn/attn.hpp: everything in one include.
#pragma once
#include "attn/attention.hpp"
#include "attn/cost.hpp"
#include "attn/dump.hpp"
#include "attn/errors.hpp"
#include "attn/flash.hpp"
#include "attn/init.hpp"
#include "attn/linear.hpp"
#include "attn/mask.hpp"
#include "attn/mha.hpp"
#include "attn/rng.hpp"
#include "attn/stats.hpp"
#include "attn/tensor.hpp"
