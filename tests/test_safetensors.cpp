// safetensors reader (hostile input) and writer (atomic), f16/bf16 conversions.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "model/safetensors.hpp"
#include "test_support.hpp"

using namespace rfa;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test::temp_dir("safetensors_" + name); }

// A file image: 8-byte length, the header text, then `data_bytes` bytes of data (value = index).
std::vector<uint8_t> image(const std::string& header, size_t data_bytes, int64_t claimed_len = -1) {
  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + data_bytes);  // reserved first: g++ 12 -Warray-bounds misfires on the grow
  uint64_t n = claimed_len < 0 ? header.size() : (uint64_t)claimed_len;
  for (int i = 0; i < 8; ++i) out.push_back((uint8_t)(n >> (8 * i)));
  for (char c : header) out.push_back((uint8_t)c);
  for (size_t i = 0; i < data_bytes; ++i) out.push_back((uint8_t)i);
  return out;
}

Status parse(const std::vector<uint8_t>& bytes) {
  auto f = SafetensorsFile::from_memory(bytes, "x.safetensors");
  return f ? Status::Ok() : f.status();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

#define CHECK_MODEL_ERROR(status_expr, ...)                                   \
  do {                                                                        \
    Status s_ = (status_expr);                                                \
    INFO("message: " << s_.message());                                        \
    CHECK(s_.code() == Code::model_error);                                    \
    for (const char* part_ : {__VA_ARGS__}) CHECK(contains(s_.message(), part_)); \
  } while (0)

}  // namespace

TEST_CASE("half and bfloat16 conversions") {
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);  // rounds to infinity
  CHECK(float_to_half(1e-8f) == 0x0000);
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  CHECK(half_to_float(0x3555) == doctest::Approx(0.33325195f));
  // every finite half survives a round trip exactly
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // nan
    if (float_to_half(half_to_float((uint16_t)h)) != h) ++bad;
  }
  CHECK(bad == 0);
  // round to nearest even between two halves: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(bf16_to_float(float_to_bf16(1.5f)) == 1.5f);
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == float_to_bf16(1.0f));  // ties to even
  CHECK(bf16_to_float(float_to_bf16(3.14159f)) == doctest::Approx(3.14159f).epsilon(1e-2));
}

TEST_CASE("write then read every dtype") {
  fs::path dir = scratch("roundtrip");
  std::map<std::string, TensorToWrite> t;
  t["a.f32"] = {{2, 3}, {1, -2, 3.5f, 4, 5, 6}, DType::f32};
  t["b.f16"] = {{4}, {0.5f, -1.25f, 1024, 0.1f}, DType::f16};
  t["c.bf16"] = {{2, 1}, {2.0f, -0.375f}, DType::bf16};
  t["d.f64"] = {{1}, {0.1f}, DType::f64};
  t["e.i64"] = {{3}, {0, 7, -3}, DType::i64};
  t["f.i32"] = {{1, 1, 2}, {5, -9}, DType::i32};
  t["g.empty"] = {{0, 4}, {}, DType::f32};
  t["h.scalar"] = {{}, {42}, DType::f32};
  const std::string path = (dir / "m.safetensors").string();
  REQUIRE(write_safetensors(path, t, {{"format", "pt"}}).ok());
  // atomic: only the final file remains
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    ++files;
    CHECK(e.path().filename() == "m.safetensors");
  }
  CHECK(files == 1);

  auto f = SafetensorsFile::open(path);
  REQUIRE_MESSAGE(f.ok(), f.status().message());
  CHECK(f->tensors().size() == t.size());
  CHECK(f->metadata().at("format") == "pt");
  for (const auto& [name, w] : t) {
    const TensorEntry* e = f->find(name);
    REQUIRE(e);
    CHECK(e->dtype == w.dtype);
    CHECK(e->shape == w.shape);
    auto r = f->read_f32(name);
    REQUIRE(r.ok());
    CHECK(r->shape == w.shape);
    REQUIRE(r->data.size() == w.data.size());
    for (size_t i = 0; i < w.data.size(); ++i) {
      float expect = w.dtype == DType::f16 ? half_to_float(float_to_half(w.data[i]))
                     : w.dtype == DType::bf16 ? bf16_to_float(float_to_bf16(w.data[i]))
                                              : w.data[i];
      CHECK(r->data[i] == expect);
    }
  }
  auto d = f->read_f64("d.f64");
  REQUIRE(d.ok());
  CHECK((*d)[0] == (double)0.1f);
  CHECK(!f->read_f32("nope").ok());

  // the same bytes parse from memory
  auto bytes = encode_safetensors(t, {{"format", "pt"}});
  REQUIRE(bytes.ok());
  CHECK(check_safetensors_memory(bytes->data(), bytes->size()).ok());
  // header is padded to 8 bytes
  uint64_t hl = 0;
  for (int i = 7; i >= 0; --i) hl = (hl << 8) | (*bytes)[(size_t)i];
  CHECK(hl % 8 == 0);
}

TEST_CASE("writer rejects inconsistent input and leaves nothing behind") {
  fs::path dir = scratch("writer_bad");
  std::map<std::string, TensorToWrite> t;
  t["x"] = {{2, 2}, {1, 2, 3}, DType::f32};
  Status s = write_safetensors((dir / "x.safetensors").string(), t);
  CHECK(s.code() == Code::invalid_argument);
  CHECK(contains(s.message(), "'x'"));
  CHECK(fs::is_empty(dir));
  std::map<std::string, TensorToWrite> ok;
  ok["x"] = {{1}, {1}, DType::f32};
  Status s2 = write_safetensors((dir / "no_such_dir" / "x.safetensors").string(), ok);
  CHECK(s2.code() == Code::io_error);
  CHECK(fs::is_empty(dir));
}

TEST_CASE("hostile headers are rejected with a message naming the tensor") {
  const std::string good = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  CHECK(parse(image(good, 16)).ok());
  CHECK(parse(image(R"({"__metadata__":{"k":"v","n":3}})", 0)).ok());
  CHECK(parse(image("{}", 0)).ok());

  SUBCASE("too short") { CHECK_MODEL_ERROR(parse({1, 2, 3}), "x.safetensors", "8-byte"); }
  SUBCASE("header length beyond the file") {
    CHECK_MODEL_ERROR(parse(image(good, 16, 1000)), "header length 1000", "exceeds");
  }
  SUBCASE("header length beyond the cap") {
    auto f = SafetensorsFile::from_memory(image(good, 16), "x.safetensors", SafetensorsLimits{16, 8, 100});
    CHECK_MODEL_ERROR(f.status(), "limit");
  }
  SUBCASE("not JSON") { CHECK_MODEL_ERROR(parse(image("{\"w\": [1,", 0)), "not valid JSON"); }
  SUBCASE("not an object") { CHECK_MODEL_ERROR(parse(image("[1,2,3]", 0)), "not a JSON object"); }
  SUBCASE("unknown dtype") {
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 4)), "'w'", "U8");
  }
  SUBCASE("shape and span disagree") {
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})", 16)), "'w'",
                      "[2,3]", "24 bytes", "16");
  }
  SUBCASE("offsets out of range") {
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", 16)), "'w'",
                      "outside the data area of 16 bytes");
  }
  SUBCASE("offsets backwards") {
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 16)), "'w'", "backwards");
  }
  SUBCASE("overlap") {
    CHECK_MODEL_ERROR(parse(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                                      "b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                  16)),
                      "overlap", "'a'", "'b'");
  }
  SUBCASE("negative and fractional dims") {
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)), "'w'", "-1");
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4)), "'w'");
  }
  SUBCASE("absurd sizes") {
    CHECK_MODEL_ERROR(
        parse(image(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,4]}})", 4)),
        "'w'", "absurd");
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]}})", 4)),
                      "'w'", "absurd");
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,99999999999999999999]}})", 4)),
                      "'w'");
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4)),
                      "'w'", "rank");
  }
  SUBCASE("zero dims make absurd others harmless") {
    CHECK(parse(image(R"({"w":{"dtype":"F32","shape":[0,4611686018427387904],"data_offsets":[0,0]}})", 0)).ok());
  }
  SUBCASE("duplicate name") {
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},
                                      "w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                  8)),
                      "'w'", "twice");
  }
  SUBCASE("missing fields") {
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4)), "'w'", "dtype");
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4)), "'w'", "shape");
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[1]}})", 4)), "'w'", "data_offsets");
    CHECK_MODEL_ERROR(parse(image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4)), "'w'", "data_offsets");
    CHECK_MODEL_ERROR(parse(image(R"({"w":7})", 4)), "'w'");
    CHECK_MODEL_ERROR(parse(image(R"({"__metadata__":[1]})", 0)), "__metadata__");
  }
}

TEST_CASE("a truncated file on disk is reported with its path") {
  fs::path dir = scratch("truncated");
  std::map<std::string, TensorToWrite> t;
  t["w"] = {{8}, std::vector<float>(8, 1.0f), DType::f32};
  const std::string path = (dir / "t.safetensors").string();
  REQUIRE(write_safetensors(path, t).ok());
  fs::resize_file(path, fs::file_size(path) - 5);
  auto f = SafetensorsFile::open(path);
  REQUIRE(!f.ok());
  CHECK(f.status().code() == Code::model_error);
  CHECK(contains(f.status().message(), path));
  CHECK(contains(f.status().message(), "'w'"));
  fs::resize_file(path, 6);
  CHECK(SafetensorsFile::open(path).status().code() == Code::model_error);
  CHECK(SafetensorsFile::open((dir / "missing.safetensors").string()).status().code() == Code::io_error);
}
