// tests/fuzz/fuzz_file.hpp: the fuzzer's bytes as a file, for readers that take
// a path (config.json, vocab.txt). An anonymous in-memory file (memfd), named by
// /proc/self/fd/N: no disk traffic, nothing left behind, a fresh one per input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace attn::fuzz {

class MemFile {
public:
    MemFile(const uint8_t* data, size_t size) {
        fd_ = ::memfd_create("attn-fuzz", MFD_CLOEXEC);
        if (fd_ < 0) die("memfd_create");
        for (size_t done = 0; done < size;) {
            const ssize_t n = ::write(fd_, data + done, size - done);
            if (n <= 0) die("write");
            done += static_cast<size_t>(n);
        }
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    ~MemFile() { ::close(fd_); }
    MemFile(const MemFile&) = delete;
    MemFile& operator=(const MemFile&) = delete;
    const std::string& path() const { return path_; }

private:
    [[noreturn]] static void die(const char* what) {
        std::perror(what);  // the harness failed, not the code under test
        std::abort();
    }
    int fd_ = -1;
    std::string path_;
};

// A broken contract: say which, then abort (libFuzzer keeps the input).
[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "fuzz contract broken: %s\n", what);
    std::abort();
}

}  // namespace attn::fuzz
