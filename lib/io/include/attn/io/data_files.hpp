// attn/io/data_files.hpp: where attn finds its data files (the text corpus, the fetched model).
//
// One search, for every command and the library: the first folder below that holds the file.
//   1. $ATTN_DATA_DIR, when set;
//   2. data/ in the working folder (a checkout, run from its root);
//   3. the per-user data folder, $XDG_DATA_HOME/attn (else ~/.local/share/attn): where
//      `attn model fetch` puts the pretrained model, from any folder;
//   4. <prefix>/share/attn/data, beside an installed binary (<prefix>/bin/attn; `cmake --install`
//      copies data/ there);
//   5. data/ in a parent folder of the executable's (a build tree: build/attn, build/tests/...);
//      not for an installed binary (4. exists), even when its prefix lies inside a checkout.
// The model has its own variable first: $ATTN_MODEL_DIR names the model folder itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// The folders searched, in order (those that exist).
std::vector<std::string> data_dirs();
// The per-user data folder (3. above), whether it exists or not; "" with neither XDG_DATA_HOME
// (absolute) nor HOME set.
std::string user_data_dir();
// The path of `rel` ("macbeth.txt", "models/all-MiniLM-L6-v2") in the first folder of
// data_dirs() that has it; nullopt when none does.
std::optional<std::string> find_data(std::string_view rel);

}  // namespace attn
