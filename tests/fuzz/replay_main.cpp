// tests/fuzz/replay_main.cpp: a main() for a fuzz target built WITHOUT libFuzzer,
// so every build (GCC's included) replays the committed corpus and the crashers
// kept in tests/fuzz/regressions/ through the target's LLVMFuzzerTestOneInput.
//   fuzz_replay_<target> DIR_OR_FILE...
// Each regular file is one input (directories are read one level deep, in name
// order). Fails when an argument is missing or when no input was found at all;
// a broken contract aborts inside the target, as under libFuzzer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
    size_t inputs = 0;
    for (int a = 1; a < argc; ++a) {
        std::error_code ec;
        std::vector<fs::path> files;
        if (fs::is_directory(argv[a], ec)) {
            for (const fs::directory_entry& e : fs::directory_iterator(argv[a], ec))
                if (e.is_regular_file()) files.push_back(e.path());
            std::sort(files.begin(), files.end());
        } else if (fs::is_regular_file(argv[a], ec)) {
            files.emplace_back(argv[a]);
        } else {
            std::fprintf(stderr, "replay: %s: no such file or directory\n", argv[a]);
            return 2;
        }
        for (const fs::path& f : files) {
            std::ifstream in(f, std::ios::binary);
            const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            if (!in.good() && !in.eof()) {
                std::fprintf(stderr, "replay: %s: cannot read\n", f.c_str());
                return 2;
            }
            LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
            ++inputs;
        }
        std::printf("replay: %s: %zu input(s)\n", argv[a], files.size());
    }
    if (inputs == 0) {
        std::fprintf(stderr, "replay: no input to replay\n");
        return 2;
    }
    std::printf("replay: %zu input(s), every one kept the target's contract\n", inputs);
    return 0;
}
