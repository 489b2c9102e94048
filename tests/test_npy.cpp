// Tests of the .npy reader and writer (attn/io/npy.hpp): files numpy wrote (the
// fuzz seeds in tests/fuzz/corpus/npy/, made with numpy 1.24's np.save), the
// writer's round trip, and one test per rule the reader enforces.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "attn/core/errors.hpp"
#include "attn/io/dump.hpp"
#include "attn/io/npy.hpp"
#include "test_util.hpp"

namespace {

attn::NpyArray seed(const std::string& name) {
    return attn::read_npy_file(attn::test::source_path("tests/fuzz/corpus/npy/" + name));
}

// The message of the InputError that parsing `bytes` throws ("" if none).
std::string error_of(const std::string& bytes) {
    try {
        (void)attn::npy_from_string(bytes, "x.npy");
    } catch (const attn::InputError& e) {
        return e.what();
    }
    return "";
}

// A version 1.0 file with this header dict (padded and ended as numpy does) and data.
std::string with_header(const std::string& dict, const std::string& data) {
    std::string h = dict;
    while ((10 + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
    return out + h + data;
}

}  // namespace

TEST_CASE("npy: reads what numpy wrote: <f4, <f8, |b1, |u1, a scalar, version 2.0") {
    const attn::NpyArray f4 = seed("seed-f4");  // np.arange(6, dtype='<f4').reshape(2, 3)
    CHECK(f4.kind == attn::NpyArray::Kind::F32);
    CHECK(f4.values.shape == attn::Shape{2, 3});
    CHECK(f4.values.data == std::vector<float>{0, 1, 2, 3, 4, 5});
    const attn::NpyArray f8 = seed("seed-f8");  // np.linspace(-1, 1, 8).reshape(2, 2, 2)
    CHECK(f8.kind == attn::NpyArray::Kind::F64);
    CHECK(f8.values.shape == attn::Shape{2, 2, 2});
    for (int k = 0; k < 8; ++k)
        CHECK(f8.values.data[static_cast<size_t>(k)] == static_cast<float>(-1.0 + 2.0 * k / 7.0));
    const attn::NpyArray b1 = seed("seed-b1");  // np.tril(np.ones((3, 3), dtype=bool))
    CHECK(b1.is_bool());
    CHECK(b1.values.data == std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1});
    const attn::NpyArray u1 = seed("seed-u1");  // np.eye(2, dtype=np.uint8)
    CHECK(u1.is_bool());
    CHECK(u1.descr == "|u1");
    CHECK(u1.values.data == std::vector<float>{1, 0, 0, 1});
    const attn::NpyArray sc = seed("seed-scalar");  // np.float32(1.5)
    CHECK(sc.values.shape.empty());
    CHECK(sc.values.data == std::vector<float>{1.5f});
    const attn::NpyArray v2 = seed("seed-v2");  // ones (1, 2, 2, 3), format version 2.0
    CHECK(v2.values.shape == attn::Shape{1, 2, 2, 3});
    CHECK(v2.values.numel() == 12);
}

TEST_CASE("npy: the writer's files read back bit for bit, with the header numpy writes") {
    const attn::Tensor t = attn::test::randn({2, 3, 5}, 7);
    const std::string bytes = attn::npy_to_string(t);
    CHECK(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 5), }") == 10);
    CHECK((bytes.size() - static_cast<size_t>(t.numel()) * 4) % 64 == 0);  // data 64-byte aligned
    const attn::NpyArray back = attn::npy_from_string(bytes);
    CHECK(back.values.shape == t.shape);
    CHECK(back.values.data == t.data);
    // the 1-D tuple has its trailing comma; the bytes equal numpy's own for the same array
    const attn::Tensor a = attn::Tensor::from({6}, {0, 1, 2, 3, 4, 5});
    CHECK(attn::npy_to_string(a).find("'shape': (6,)") != std::string::npos);
    CHECK(attn::npy_to_string(attn::Tensor::from({2, 3}, {0, 1, 2, 3, 4, 5})) ==
          attn::read_file(attn::test::source_path("tests/fuzz/corpus/npy/seed-f4")));
    const std::string b = attn::npy_bool_to_string({3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1});
    CHECK(b == attn::read_file(attn::test::source_path("tests/fuzz/corpus/npy/seed-b1")));
    CHECK_THROWS_AS(attn::npy_bool_to_string({2}, {0, 2}), attn::InputError);
}

TEST_CASE("npy: every rule is a one-line error naming the file") {
    const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    const std::string two(8, '\0');
    REQUIRE(error_of(with_header(f4, two)).empty());
    struct Case {
        std::string bytes, says;
    };
    const Case cases[] = {
        {"", "no \\x93NUMPY magic"},
        {"PK\x03\x04 not numpy at all", "no \\x93NUMPY magic"},
        {std::string("\x93NUMPY\x03\x00\x10\x00\x00\x00", 10), "version 3.0"},
        {std::string("\x93NUMPY\x01\x00\xff\xff", 10), "the header says 65535 bytes"},
        {std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12), "a header of 2147483647 bytes"},
        {with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", two), "fortran_order is True"},
        {with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", two), "dtype '>f4'"},
        {with_header("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", two), "dtype '<i8'"},
        {with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", two), "structured dtype"},
        {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", two),
         "needs 12 data bytes, the file has 8"},
        {with_header(f4, two + "x"), "needs 8 data bytes, the file has 9"},
        {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", two),
         "overflows"},
        {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", two),
         "overflows int64"},
        {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", two), "expected a size"},
        {with_header("{'descr': '<f4', 'shape': (2,), }", two), "needs the keys"},
        {with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", two),
         "appears twice"},
        {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two), "unknown header key 'x'"},
        {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", two), "expected ',' or '}'"},
        {with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x02", 2)),
         "holds 2 at element 1"},
    };
    for (const Case& c : cases) {
        const std::string msg = error_of(c.bytes);
        CAPTURE(msg);
        CHECK(msg.rfind("x.npy: ", 0) == 0);
        CHECK(msg.find(c.says) != std::string::npos);
        CHECK(msg.find('\n') == std::string::npos);
    }
    // every prefix of a good file is refused, never read past its end
    const std::string good = attn::read_file(attn::test::source_path("tests/fuzz/corpus/npy/seed-f8"));
    for (size_t n = 0; n < good.size(); ++n) CHECK_FALSE(error_of(good.substr(0, n)).empty());
}
