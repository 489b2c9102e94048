// The dump's three file formats (attn/io/dump_file.hpp): .json, .safetensors and .npz
// round-trip bit for bit, in the library and through `attn forward --dump/--input`,
// `attn view` and `--mask-file`; an unknown extension is refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "attn/io/dump_file.hpp"
#include "test_util.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

// A dump holding what makes a round trip hard: -inf, inf, NaN, -0.0, a subnormal,
// a boolean mask, a config with strings, a seed above 2^53.
Dump tricky_dump() {
    Dump d;
    d.seed = 18446744073709551557ull;
    d.config = {{"batch", 1}, {"mask", "causal"}, {"fill", "-inf"}, {"tokens", {"a", "b\"c", "ü"}}};
    Tensor x = test::randn({2, 3}, 4);
    x.data[0] = -INFINITY;
    x.data[1] = INFINITY;
    x.data[2] = NAN;
    x.data[3] = -0.0f;
    x.data[4] = 1e-40f;  // subnormal
    Tensor m({1, 2, 2});
    m.data = {1, 0, 1, 1};
    d.tensors["x"] = x;
    d.tensors["mask"] = m;
    d.tensors["W_q"] = test::randn({3, 2}, 5);
    d.order = {"x", "W_q", "mask"};  // not alphabetical: the order must survive
    return d;
}

// bits: every float bit for bit (the binary formats); otherwise NaN may come back as
// another NaN (JSON writes every NaN as "NaN").
void check_same(const Dump& a, const Dump& b, bool order = true, bool bits = true) {
    CHECK(a.seed == b.seed);
    CHECK(a.config == b.config);
    if (order) CHECK(a.order == b.order);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& [name, t] : a.tensors) {
        INFO(name);
        REQUIRE(b.tensors.count(name) == 1);
        const Tensor& u = b.tensors.at(name);
        CHECK(u.shape == t.shape);
        REQUIRE(u.data.size() == t.data.size());
        if (bits) {
            CHECK(std::memcmp(u.data.data(), t.data.data(), t.data.size() * sizeof(float)) == 0);  // bit for bit
        } else {
            for (size_t k = 0; k < t.data.size(); ++k)
                CHECK(((std::isnan(t.data[k]) && std::isnan(u.data[k])) ||
                       std::memcmp(&u.data[k], &t.data[k], sizeof(float)) == 0));
        }
    }
}

fs::path temp_dir(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("attn_dump_formats_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("dump formats: .json, .safetensors and .npz round-trip every bit, the order, config and seed") {
    const Dump d = tricky_dump();
    const fs::path dir = temp_dir("lib");
    for (const char* ext : {".json", ".safetensors", ".npz"}) {
        INFO(ext);
        const std::string path = (dir / (std::string("d") + ext)).string();
        write_dump_file(path, d);
        const bool json = std::string(ext) == ".json";  // JSON lists tensors by name and has one NaN
        check_same(d, read_dump_any(path), !json, !json);
    }
    CHECK(dump_format_of("-") == DumpFormat::json);
    CHECK(dump_format_of("a.b.npz") == DumpFormat::npz);
    fs::remove_all(dir);
}

TEST_CASE("dump formats: an unknown extension is refused, naming the three") {
    for (const char* path : {"x.bin", "x", "x.npy", "x.safetensor", ".npz"}) {
        INFO(path);
        CHECK_THROWS_WITH_AS(dump_format_of(path), doctest::Contains(".safetensors, .npz or .json"), InputError);
    }
}

TEST_CASE("dump formats: the npz is a plain stored zip whose entries are .npy arrays numpy reads") {
    const std::string z = dump_to_npz(tricky_dump());
    const std::vector<ZipEntry> e = zip_entries(z, "z");
    REQUIRE(e.size() == 4);
    CHECK(e[0].name == "x.npy");
    CHECK(e[1].name == "W_q.npy");
    CHECK(e[2].name == "mask.npy");
    CHECK(e[3].name == "__attn__.npy");
    CHECK(npy_from_string(e[2].data).descr == "|b1");  // the boolean mask as numpy's bool
    CHECK(npy_from_string(e[0].data).descr == "<f4");
    CHECK(std::string(e[3].data).find("'descr': '|S") != std::string::npos);
    // The same dump gives the same bytes (the zip's timestamps are fixed).
    CHECK(dump_to_npz(tricky_dump()) == z);
}

TEST_CASE("dump formats: a damaged or compressed npz is refused with a message, never read wrong") {
    const std::string z = dump_to_npz(tricky_dump());
    SUBCASE("a flipped data byte fails the CRC") {
        std::string bad = z;
        bad[100] = static_cast<char>(bad[100] ^ 1);
        CHECK_THROWS_WITH_AS(dump_from_npz(bad, "f.npz"), doctest::Contains("CRC"), InputError);
    }
    SUBCASE("a compressed entry (np.savez_compressed)") {
        std::string bad = z;
        const size_t cd = z.rfind(std::string("PK\x01\x02", 4), z.size() - 22);
        REQUIRE(cd != std::string::npos);
        bad[cd + 10] = 8;  // deflate
        CHECK_THROWS_WITH_AS(dump_from_npz(bad, "f.npz"), doctest::Contains("savez_compressed"), InputError);
    }
    SUBCASE("every truncation") {
        for (size_t n = 0; n < z.size(); n += 7) CHECK_THROWS_AS(dump_from_npz(z.substr(0, n), "f.npz"), InputError);
    }
    SUBCASE("an envelope of another format") {
        Dump d = tricky_dump();
        d.format = "other";
        CHECK_THROWS_WITH_AS(dump_from_npz(dump_to_npz(d), "f.npz"), doctest::Contains("attn-dump"), InputError);
        CHECK_THROWS_WITH_AS(dump_from_safetensors(dump_to_safetensors(d), "f"), doctest::Contains("attn-dump"),
                             InputError);
    }
}

TEST_CASE("dump formats: an npz written as numpy's np.savez writes it (Python's zipfile, ZIP64 extras) is read") {
    if (test::run_shell("python3 -c 'import zipfile' 2>/dev/null").code != 0) {
        test::skip("python3 with zipfile is not installed");
        return;
    }
    const fs::path dir = temp_dir("py");
    const Dump d = tricky_dump();
    // Each entry's .npy bytes from attn's writer, re-packed by Python the way numpy.savez does:
    // zipf.open(name, 'w', force_zip64=True), no compression.
    const std::string npz = dump_to_npz(d);  // the entries are views into it: it must outlive them
    const std::vector<ZipEntry> e = zip_entries(npz, "z");
    for (const ZipEntry& x : e) write_file_atomic((dir / x.name).string(), x.data);
    const std::string script =
        "import zipfile,sys,os\n"
        "d=sys.argv[1]\n"
        "with zipfile.ZipFile(os.path.join(d,'py.npz'),'w',compression=zipfile.ZIP_STORED) as z:\n"
        "  for n in ['x.npy','W_q.npy','mask.npy','__attn__.npy']:\n"
        "    with z.open(n,'w',force_zip64=True) as f: f.write(open(os.path.join(d,n),'rb').read())\n"
        "with zipfile.ZipFile(os.path.join(d,'attn.npz')) as z: assert z.testzip() is None\n";
    write_file_atomic((dir / "pack.py").string(), script);
    write_dump_file((dir / "attn.npz").string(), d);
    const test::CliResult r =
        test::run_shell("python3 '" + (dir / "pack.py").string() + "' '" + dir.string() + "' 2>&1");
    INFO(r.out);
    REQUIRE(r.code == 0);  // Python's zipfile also checked attn's archive (testzip: every CRC)
    check_same(d, read_dump_any((dir / "py.npz").string()));
    fs::remove_all(dir);
}

TEST_CASE("attn forward --dump: each extension reads back through --input, view and --mask-file bit for bit") {
    const fs::path dir = temp_dir("cli");
    const std::string base = (dir / "run").string();
    const std::string args = "forward --batch 2 --seq 5 --d-model 8 --heads 2 --mask causal --backward --seed 9";
    Dump first;
    for (const char* ext : {".json", ".safetensors", ".npz"}) {
        INFO(ext);
        const std::string path = base + ext;
        const bool binary = std::string(ext) != ".json";
        const test::CliResult w = test::run_attn(args + " --dump '" + path + "'");
        REQUIRE(w.code == 0);
        const Dump d = read_dump_any(path);
        if (first.tensors.empty()) first = d;
        else check_same(first, d, false);  // the three files hold the same tensors, config, seed
        static std::vector<std::string> binary_order;  // the JSON reader lists its tensors by name
        if (binary && binary_order.empty()) binary_order = d.order;
        else if (binary) CHECK(d.order == binary_order);
        // --input reads the file back: the rerun's dump equals it.
        const std::string again = (dir / (std::string("again") + ext)).string();
        const test::CliResult i =
            test::run_attn("forward --backward --input '" + path + "' --dump '" + again + "'");
        INFO(i.out);
        REQUIRE(i.code == 0);
        const Dump a = read_dump_any(again);
        for (const char* name : {"x", "W_q", "mask", "weights", "out"}) {
            INFO(name);
            REQUIRE(a.tensors.count(name) == 1);
            CHECK(a.tensors.at(name).data.size() == d.tensors.at(name).data.size());
            CHECK(std::memcmp(a.tensors.at(name).data.data(), d.tensors.at(name).data.data(),
                              d.tensors.at(name).data.size() * sizeof(float)) == 0);
        }
        // view draws the same heatmap from each format.
        const test::CliResult v = test::run_attn("view '" + path + "' --no-color");
        REQUIRE(v.code == 0);
        static std::string view_json;
        std::string shown = v.out;
        shown.erase(0, shown.find('\n'));  // the first line names the file
        if (std::string(ext) == ".json") view_json = shown;
        else CHECK(shown == view_json);
        // --mask-file takes the dump's mask tensor.
        const test::CliResult m = test::run_attn(
            "forward --batch 2 --seq 5 --d-model 8 --heads 2 --mask-file '" + path + "'");
        INFO(m.out);
        CHECK(m.code == 0);
    }
    fs::remove_all(dir);
}

TEST_CASE("attn forward --dump: an unknown extension is one line, exit 2, before any work") {
    const fs::path dir = temp_dir("ext");
    const test::CliResult r = test::run_attn("forward --dump '" + (dir / "x.bin").string() + "'");
    CHECK(r.code == 2);
    CHECK(r.out.find(".safetensors, .npz or .json") != std::string::npos);
    CHECK(r.out.rfind("attn: error: --dump: ", 0) == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    CHECK(!fs::exists(dir / "x.bin"));
    fs::remove_all(dir);
}
