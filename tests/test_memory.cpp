// The memory guard (app/memory.hpp): the limit reader on fake cgroup files, and
// the estimates against the peak RSS of real runs: never below it (the guard
// must not let through a run that does not fit), at most twice it (nor refuse
// runs that would).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attn/model/bert.hpp"
#include "memory.hpp"
#include "test_util.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

// AddressSanitizer maps terabytes of shadow memory (ulimit -v cannot hold it) and
// keeps freed memory in quarantine: the peak RSS of a sanitized attn is not attn's.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif
// The CUDA build's attn maps cuBLAS and the CUDA runtime: a few hundred MB of RSS
// (and of address space under ulimit -v) before any work, which the estimates'
// program baseline (kProgramBytes) does not count. The estimates are calibrated on
// the CPU build; tests/CMakeLists.txt defines ATTN_CUDA here in the CUDA build.
#ifdef ATTN_CUDA
constexpr bool kCudaBuild = true;
#else
constexpr bool kCudaBuild = false;
#endif

void write_text(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
}

// Runs attn with `args` (no shell) and returns its peak RSS in bytes (ru_maxrss,
// the child's VmHWM), or -1 when it did not exit 0.
double peak_rss(const std::vector<std::string>& args) {
    const pid_t child = ::fork();
    if (child < 0) return -1;
    if (child == 0) {
        std::vector<char*> argv{const_cast<char*>(ATTN_BINARY)};
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        const int devnull = ::open("/dev/null", O_WRONLY);
        ::dup2(devnull, STDOUT_FILENO);
        ::dup2(devnull, STDERR_FILENO);
        ::execv(ATTN_BINARY, argv.data());
        ::_exit(127);
    }
    int st = 0;
    struct rusage ru {};
    if (::wait4(child, &st, 0, &ru) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return static_cast<double>(ru.ru_maxrss) * 1024.0;  // kilobytes on Linux
}

}  // namespace

TEST_CASE("memory: the limit is the smallest of physical memory, the cgroup's (v2 or v1, up the path) and RLIMIT_AS") {
    const std::string root = test::temp_dir("cgroup");
    const double GiB = 1024.0 * 1024 * 1024, physical = 64 * GiB;
    const std::string self = root + "/proc-self-cgroup";

    SUBCASE("no cgroup files: physical memory") {
        const auto m = cli::memory_limit(root + "/none", root + "/none", physical, 0);
        CHECK(m.bytes == physical);
        CHECK(m.source == "physical memory");
    }
    SUBCASE("v2 in a container: the root's memory.max; \"max\" is no limit") {
        write_text(self, "0::/\n");
        write_text(root + "/memory.max", "1073741824\n");
        auto m = cli::memory_limit(root, self, physical, 0);
        CHECK(m.bytes == 1 * GiB);
        CHECK(m.source == "cgroup memory.max");
        write_text(root + "/memory.max", "max\n");
        CHECK(cli::memory_limit(root, self, physical, 0).bytes == physical);
    }
    SUBCASE("v2 nested: the smallest limit on the way up from the process's cgroup") {
        write_text(self, "0::/a/b\n");
        write_text(root + "/a/memory.max", "536870912\n");
        write_text(root + "/a/b/memory.max", "max\n");
        write_text(root + "/memory.max", "2147483648\n");
        CHECK(cli::memory_limit(root, self, physical, 0).bytes == 0.5 * GiB);
        write_text(root + "/a/b/memory.max", "268435456\n");
        CHECK(cli::memory_limit(root, self, physical, 0).bytes == 0.25 * GiB);
    }
    SUBCASE("v1: memory.limit_in_bytes of the memory controller's cgroup; its huge 'unlimited' is none") {
        write_text(self, "5:cpuacct,cpu:/x\n4:memory:/x\n");
        write_text(root + "/memory/x/memory.limit_in_bytes", "9223372036854771712\n");
        CHECK(cli::memory_limit(root, self, physical, 0).bytes == physical);
        write_text(root + "/memory/x/memory.limit_in_bytes", "3221225472\n");
        const auto m = cli::memory_limit(root, self, physical, 0);
        CHECK(m.bytes == 3 * GiB);
        CHECK(m.source == "cgroup memory.limit_in_bytes");
    }
    SUBCASE("RLIMIT_AS below the rest wins; garbage in a file is no limit") {
        write_text(self, "0::/\n");
        write_text(root + "/memory.max", "lots\n");
        const auto m = cli::memory_limit(root, self, physical, 2 * GiB);
        CHECK(m.bytes == 2 * GiB);
        CHECK(m.source == "RLIMIT_AS");
    }
    fs::remove_all(root);
}

TEST_CASE("memory: a run over RLIMIT_AS (ulimit -v) is refused naming the option, before any work") {
    if (kSanitized) {
        test::skip("built with AddressSanitizer, whose shadow memory does not fit under ulimit -v");
        return;
    }
    // ulimit -v is the one limit a test can set for a child without privileges.
    const auto r = test::run_shell("ulimit -v 1048576; '" + std::string(ATTN_BINARY) +
                                   "' forward --seq 1024 --heads 8 --d-model 64 --dump /dev/null 2>&1");
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.rfind("attn: error: --seq: ", 0) == 0);
    CHECK(r.out.find("RLIMIT_AS") != std::string::npos);
}

TEST_CASE("memory: the estimate of forward --dump is at least the measured peak RSS and at most twice it") {
    if (kCudaBuild) {
        test::skip("the CUDA build maps cuBLAS and the CUDA runtime, which the estimates do not count");
        return;
    }
    if (kSanitized) {
        test::skip("built with AddressSanitizer: its shadow memory and quarantine are in the peak RSS");
        return;
    }
    const std::string dir = test::temp_dir("rss");
    const std::string dump = dir + "/d.json";
    struct Case {
        int64_t batch, seq, d_model, heads;
        bool dump, dropout;
    };
    for (const Case& c :
         {Case{2, 512, 64, 4, true, false}, Case{1, 768, 32, 2, true, true}, Case{2, 512, 64, 4, false, false}}) {
        std::vector<std::string> args = {"forward", "--batch", std::to_string(c.batch), "--seq", std::to_string(c.seq),
                                         "--d-model", std::to_string(c.d_model), "--heads", std::to_string(c.heads)};
        if (c.dump) args.insert(args.end(), {"--dump", dump});
        if (c.dropout) args.insert(args.end(), {"--train", "--dropout", "0.1"});
        const double measured = peak_rss(args);
        cli::ForwardSizes s{c.batch, c.seq, c.d_model, c.heads, c.d_model / c.heads, c.d_model / c.heads, true, true,
                            c.dropout, c.dump};
        const double estimate = cli::forward_memory_bytes(s);
        INFO("seq " << c.seq << " dump " << c.dump << ": measured " << measured / 1e6 << " MB, estimate "
                    << estimate / 1e6 << " MB");
        REQUIRE(measured > 0);
        CHECK(estimate >= measured);
        CHECK(estimate <= 2.0 * measured);
        if (c.dump) {
            // The JSON writer's bytes per float, from the file it wrote: within the bound the estimate uses.
            const double per_float = static_cast<double>(fs::file_size(dump)) / cli::forward_dump_floats(s);
            INFO("JSON bytes per float " << per_float);
            CHECK(per_float <= kJsonBytesPerFloat);
            CHECK(per_float >= 0.5 * kJsonBytesPerFloat);  // the bound is not wildly loose
        }
    }
    // Reading the dump back (attn view): the same bounds for kDumpReadBytesPerFileByte.
    REQUIRE(peak_rss({"forward", "--batch", "2", "--seq", "512", "--d-model", "64", "--heads", "4", "--dump", dump}) >
            0);
    const double size = static_cast<double>(fs::file_size(dump));
    const double measured = peak_rss({"view", dump});
    const double estimate = cli::kProgramBytes + kDumpReadBytesPerFileByte * size;
    INFO("view of " << size / 1e6 << " MB: measured " << measured / 1e6 << " MB, estimate " << estimate / 1e6 << " MB");
    REQUIRE(measured > 0);
    CHECK(estimate >= measured);
    CHECK(estimate <= 2.0 * measured);
    fs::remove_all(dir);
}

TEST_CASE("memory: model attention counts its --svg and --dump: refused over the limit, and the estimate bounds "
          "the peak RSS (skipped without the model)") {
    if (kCudaBuild) {
        test::skip("the CUDA build maps cuBLAS and the CUDA runtime, which the estimates do not count");
        return;
    }
    if (kSanitized) {
        test::skip("built with AddressSanitizer: its shadow memory is in the RSS and does not fit under ulimit -v");
        return;
    }
    if (!test::model_or_skip()) return;
    const std::string dir = test::temp_dir("model-mem");
    const ModelFiles files = locate_model(std::getenv("ATTN_MODEL_DIR"));
    const double weights = static_cast<double>(fs::file_size(files.weights));
    // 540 words, cut to the model's 256 tokens: 6 layers x 12 heads x 256^2 cells.
    std::string text;
    for (int i = 0; i < 60; ++i) text += "the quick brown fox jumps over the lazy dog ";
    for (const auto& entry : {std::pair{"--svg", 2097152}, {"--dump", 524288}}) {
        const char* out = entry.first;  // clang 14: no structured binding inside INFO
        const int ulimit_kib = entry.second;
        INFO(out);
        const std::string file = dir + "/never" + (std::string(out) == "--dump" ? ".json" : ".svg");
        const auto r = test::run_shell("ulimit -v " + std::to_string(ulimit_kib) + "; '" + std::string(ATTN_BINARY) +
                                       "' model attention --truncate --text '" + text + "' " + out + " '" + file +
                                       "' 2>&1 >/dev/null | grep -v '^attn: warning'");
        INFO(r.out);
        CHECK(r.out.rfind(std::string("attn: error: ") + out + ": ", 0) == 0);
        CHECK(r.out.find("RLIMIT_AS") != std::string::npos);
        CHECK(!fs::exists(file));
    }
    // 10 sentences, about 100 tokens: large enough that the attention, not the program, is most of the peak.
    std::string shorter;
    for (int i = 0; i < 10; ++i) shorter += "the quick brown fox jumps over the lazy dog. ";
    const BertConfig config = read_bert_config(files);
    const int64_t T = static_cast<int64_t>(load_tokenizer(files, config).encode(shorter).ids.size());
    for (const auto& entry : {std::pair{false, false}, {true, false}, {false, true}}) {
        const bool dump = entry.first, svg = entry.second;  // clang 14: no structured binding inside INFO
        std::vector<std::string> args = {"model", "attention", "--text", shorter};
        if (dump) args.insert(args.end(), {"--dump", dir + "/m.json"});
        if (svg) args.insert(args.end(), {"--svg", dir + "/m.svg"});
        const double measured = peak_rss(args);
        const double estimate =
            cli::model_attention_bytes(weights, config.layers, config.heads, config.hidden, T, dump, svg);
        INFO("dump " << dump << " svg " << svg << ": measured " << measured / 1e6 << " MB, estimate " << estimate / 1e6
                     << " MB");
        REQUIRE(measured > 0);
        CHECK(estimate >= measured);
        CHECK(estimate <= 2.0 * measured);
    }
    fs::remove_all(dir);
}

TEST_CASE(
    "memory: the weight estimate is exactly the bytes of MultiHeadAttention's parameters, GQA and kdim/vdim too") {
    struct Case {
        int64_t D, H, Dk, Dv, Hkv, kdim, vdim;
        bool bias;
    };
    for (const Case& c : {Case{16, 4, 4, 4, 0, 0, 0, true}, Case{16, 4, 4, 6, 2, 0, 0, true},
                          Case{16, 4, 4, 4, 1, 7, 9, false}, Case{24, 6, 5, 3, 3, 11, 0, true}}) {
        MhaConfig cfg{c.D, c.H, c.Dk, c.Dv, c.bias, c.kdim, c.vdim};
        cfg.kv_heads = c.Hkv;
        const MultiHeadAttention mha(cfg.resolved());
        double floats = 0;
        for (const Linear* l : {&mha.q_proj, &mha.k_proj, &mha.v_proj, &mha.o_proj})
            floats += static_cast<double>(l->W.numel() + (c.bias ? l->b.numel() : 0));
        cli::ForwardSizes s{1, 1, c.D, c.H, c.Dk, c.Dv, c.bias, false, false, false};
        s.kv_heads = c.Hkv;
        s.kdim = c.kdim;
        s.vdim = c.vdim;
        CAPTURE(c.Hkv);
        CAPTURE(c.kdim);
        CHECK(cli::forward_weight_bytes(s) == 4.0 * floats);
    }
}
