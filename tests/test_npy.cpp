// .npy reading (validated against the file) and atomic writing.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/npy.hpp"
#include "test_support.hpp"

using namespace rfa;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test::temp_dir("npy_" + name); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A .npy image with the given version, header dict text and raw data bytes.
std::vector<uint8_t> npy(int major, const std::string& dict, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', (uint8_t)major, 0};
  std::string h = dict + "\n";
  if (major == 1) {
    out.push_back((uint8_t)(h.size() & 0xff));
    out.push_back((uint8_t)(h.size() >> 8));
  } else {
    for (int i = 0; i < 4; ++i) out.push_back((uint8_t)(h.size() >> (8 * i)));
  }
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

Status parse_status(const std::vector<uint8_t>& b) {
  auto r = parse_npy(b.data(), b.size(), "a.npy");
  return r ? Status::Ok() : r.status();
}

void expect_error(const std::vector<uint8_t>& b, std::initializer_list<const char*> parts) {
  Status s = parse_status(b);
  INFO("message: " << s.message());
  CHECK(s.code() == Code::input_error);
  CHECK(contains(s.message(), "a.npy"));
  for (const char* p : parts) CHECK(contains(s.message(), p));
}

}  // namespace

TEST_CASE("write f32 / i64 then read back") {
  fs::path dir = scratch("rt");
  const std::string f = (dir / "x.npy").string(), i = (dir / "i.npy").string(), s = (dir / "s.npy").string(),
                    e = (dir / "e.npy").string(), v = (dir / "v.npy").string();
  REQUIRE(write_npy_f32(f, {2, 3}, {1, 2, 3, 4, 5, -6.5f}).ok());
  REQUIRE(write_npy_i64(i, {4}, {0, -1, 1LL << 40, 7}).ok());
  REQUIRE(write_npy_f32(s, {}, {3.25f}).ok());
  REQUIRE(write_npy_f32(e, {0, 5}, {}).ok());
  REQUIRE(write_npy_f32(v, {3}, {1, 2, 3}).ok());
  for (auto& ent : fs::directory_iterator(dir)) CHECK(!contains(ent.path().filename().string(), ".tmp"));

  auto a = read_npy(f);
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  CHECK(a->shape == std::vector<int64_t>{2, 3});
  CHECK(!a->is_integer);
  CHECK(a->descr == "<f4");
  CHECK(a->values == std::vector<double>{1, 2, 3, 4, 5, -6.5});
  auto b = read_npy(i);
  REQUIRE(b.ok());
  CHECK(b->is_integer);
  CHECK(b->ints == std::vector<int64_t>{0, -1, 1LL << 40, 7});
  auto c = read_npy(s);
  REQUIRE(c.ok());
  CHECK(c->shape.empty());
  CHECK(c->numel() == 1);
  CHECK(c->values == std::vector<double>{3.25});
  auto d = read_npy(e);
  REQUIRE(d.ok());
  CHECK(d->numel() == 0);
  // numpy's layout: "(3,)" for one dimension, header padded to 64 bytes
  std::ifstream in(v, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(contains(text, "'shape': (3,)"));
  CHECK((text.size() - 12) % 64 == 0);

  CHECK(write_npy_f32(f, {2, 2}, {1, 2, 3}).code() == Code::invalid_argument);
  CHECK(read_npy((dir / "missing.npy").string()).status().code() == Code::io_error);
}

TEST_CASE("other valid layouts: v2.0 header, <f8, <i4, double quotes, no trailing comma") {
  auto a = parse_npy(npy(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", bytes_of<double>({0.1, -2})).data(),
                     0, "a.npy");
  CHECK(!a.ok());  // size 0: not even a magic
  auto img = npy(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", bytes_of<double>({0.1, -2}));
  auto r = parse_npy(img.data(), img.size(), "a.npy");
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->values == std::vector<double>{0.1, -2});
  img = npy(1, "{\"shape\": (1, 2), \"descr\": \"<i4\", \"fortran_order\": False}", bytes_of<int32_t>({-5, 9}));
  r = parse_npy(img.data(), img.size(), "a.npy");
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->ints == std::vector<int64_t>{-5, 9});
  CHECK(r->shape == std::vector<int64_t>{1, 2});
  img = npy(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (1L,)}", bytes_of<float>({2.5f}));
  r = parse_npy(img.data(), img.size(), "a.npy");
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->values == std::vector<double>{2.5});
}

TEST_CASE("malformed and unsupported .npy files are rejected") {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const auto two = bytes_of<float>({1, 2});
  CHECK(parse_status(npy(1, ok, two)).ok());
  SUBCASE("fortran order") {
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", two), {"fortran_order"});
  }
  SUBCASE("big-endian") {
    expect_error(npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", two), {"big-endian", ">f4"});
  }
  SUBCASE("unsupported dtype") {
    expect_error(npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (8,), }", two), {"|u1", "unsupported"});
    expect_error(npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", two), {"descr"});
  }
  SUBCASE("data shorter or longer than the shape") {
    expect_error(npy(1, ok, bytes_of<float>({1})), {"8 data bytes", "4 found"});
    expect_error(npy(1, ok, bytes_of<float>({1, 2, 3})), {"8 data bytes", "12 found"});
  }
  SUBCASE("absurd shape") {
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }",
                     two),
                 {"absurd"});
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", two),
                 {"too large"});
  }
  SUBCASE("bad magic, version, header length") {
    auto b = npy(1, ok, two);
    b[1] = 'X';
    expect_error(b, {"magic"});
    expect_error(npy(4, ok, two), {"version 4.0"});
    b = npy(1, ok, two);
    b[8] = 0xff;
    b[9] = 0xff;
    expect_error(b, {"header length 65535", "exceeds"});
    expect_error({0x93, 'N', 'U'}, {"magic"});
  }
  SUBCASE("malformed dicts") {
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False}", two), {"lacks"});
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", two), {"extra"});
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", two), {"fortran_order"});
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", two), {"shape"});
    expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) junk", two), {"malformed"});
    expect_error(npy(1, "'descr': '<f4'", two), {"malformed"});
    expect_error(npy(1, "{'descr: '<f4'", two), {"malformed"});
  }
}
