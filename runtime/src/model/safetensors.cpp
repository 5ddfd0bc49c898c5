#include "model/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <filesystem>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include "model/file_util.hpp"

static_assert(std::endian::native == std::endian::little,
              "safetensors and .npy data are little-endian; a big-endian host needs byte swaps here");

namespace rfa {

using json = nlohmann::json;

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f64: return "F64";
    case DType::i64: return "I64";
    case DType::i32: return "I32";
  }
  return "?";
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::f64: return 8;
    case DType::i64: return 8;
    case DType::i32: return 4;
  }
  return 1;
}

int64_t TensorEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated at parse: no overflow
  return n;
}

// ---- half / bfloat16 -------------------------------------------------------------------------

float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan (payload kept)
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (absx < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (absx < 0x33000000u) return (uint16_t)sign;  // < 2^-25: rounds to zero
    uint32_t exp = absx >> 23;
    uint32_t man = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14 + (127 - exp) - 1 ... so that the result is man >> (shift)
    // value = man * 2^(exp-150); half subnormal unit = 2^-24 -> q = man * 2^(exp-126)
    uint32_t q = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return (uint16_t)(sign | q);
  }
  uint32_t h = ((absx >> 13) - ((127u - 15u) << 10));
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return (uint16_t)(sign | h);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>((uint32_t)b << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet nan
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return (uint16_t)(x >> 16);
}

// ---- header parsing --------------------------------------------------------------------------

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Status header_error(const std::string& label, const std::string& what) {
  return make_error(Code::model_error, label + ": " + what);
}

Status tensor_error(const std::string& label, const std::string& name, const std::string& what) {
  return make_error(Code::model_error, label + ": tensor '" + name + "': " + what);
}

bool parse_dtype(const std::string& s, DType& out) {
  if (s == "F32") out = DType::f32;
  else if (s == "F16") out = DType::f16;
  else if (s == "BF16") out = DType::bf16;
  else if (s == "F64") out = DType::f64;
  else if (s == "I64") out = DType::i64;
  else if (s == "I32") out = DType::i32;
  else return false;
  return true;
}

// A JSON value as a non-negative integer that fits in uint64.
bool as_u64(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer()) {
    int64_t s = v.get<int64_t>();
    if (s < 0) return false;
    out = (uint64_t)s;
    return true;
  }
  return false;
}

std::string json_brief(const json& v) {
  std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

Status parse_entry(const std::string& label, const std::string& name, const json& v,
                   uint64_t data_bytes, const SafetensorsLimits& limits, TensorEntry& e) {
  e.name = name;
  if (!v.is_object()) return tensor_error(label, name, "entry is not a JSON object");
  auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) return tensor_error(label, name, "missing string 'dtype'");
  if (!parse_dtype(dt->get<std::string>(), e.dtype))
    return tensor_error(label, name,
                        "dtype '" + dt->get<std::string>() +
                            "' unsupported (expected one of F32, F16, BF16, F64, I64, I32)");
  auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array()) return tensor_error(label, name, "missing array 'shape'");
  if (sh->size() > (size_t)limits.max_rank)
    return tensor_error(label, name, "rank " + std::to_string(sh->size()) + " exceeds the limit of " +
                                         std::to_string(limits.max_rank));
  uint64_t numel = 1;
  bool overflow = false;
  for (const json& d : *sh) {
    uint64_t dim;
    if (!as_u64(d, dim) || dim > (uint64_t)std::numeric_limits<int64_t>::max())
      return tensor_error(label, name, "shape entry " + json_brief(d) + " is not a non-negative integer");
    e.shape.push_back((int64_t)dim);
    if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
    else numel *= dim;
  }
  // A zero dimension makes the product 0 whatever the others claim; otherwise overflow is fatal.
  bool has_zero = std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end();
  if (has_zero) numel = 0;
  else if (overflow || numel > std::numeric_limits<uint64_t>::max() / dtype_size(e.dtype) ||
           numel > (uint64_t)std::numeric_limits<int64_t>::max())
    return tensor_error(label, name, "shape " + shape_str(e.shape) + " has an absurd element count");
  uint64_t nbytes = numel * dtype_size(e.dtype);
  auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2)
    return tensor_error(label, name, "missing 'data_offsets' [begin, end]");
  if (!as_u64((*off)[0], e.begin) || !as_u64((*off)[1], e.end))
    return tensor_error(label, name, "data_offsets are not non-negative integers");
  if (e.begin > e.end)
    return tensor_error(label, name, "data_offsets [" + std::to_string(e.begin) + ", " +
                                         std::to_string(e.end) + "] run backwards");
  if (e.end > data_bytes)
    return tensor_error(label, name, "data_offsets [" + std::to_string(e.begin) + ", " +
                                         std::to_string(e.end) + "] outside the data area of " +
                                         std::to_string(data_bytes) + " bytes (truncated file?)");
  if (e.end - e.begin != nbytes)
    return tensor_error(label, name, "shape " + shape_str(e.shape) + " " + dtype_name(e.dtype) +
                                         " needs " + std::to_string(nbytes) + " bytes, data_offsets span " +
                                         std::to_string(e.end - e.begin) + " found");
  return Status::Ok();
}

}  // namespace

Status parse_safetensors_header(std::string_view header_json, uint64_t data_bytes,
                                const std::string& label, const SafetensorsLimits& limits,
                                std::vector<TensorEntry>& tensors,
                                std::map<std::string, std::string>& metadata) {
  tensors.clear();
  metadata.clear();
  try {
    // Duplicate top-level keys would silently shadow each other in the parsed object: catch them
    // while parsing (depth 1 = keys of the top-level object).
    std::set<std::string> seen;
    std::string duplicate;
    json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
      if (ev == json::parse_event_t::key && depth == 1 && parsed.is_string()) {
        const std::string& k = parsed.get_ref<const std::string&>();
        if (!seen.insert(k).second && duplicate.empty()) duplicate = k;
      }
      return true;
    };
    json h;
    try {
      h = json::parse(header_json.begin(), header_json.end(), cb);
    } catch (const json::parse_error& ex) {
      return header_error(label, std::string("header is not valid JSON: ") + ex.what());
    }
    if (!h.is_object()) return header_error(label, "header is not a JSON object");
    if (!duplicate.empty()) return header_error(label, "tensor '" + duplicate + "' appears twice in the header");
    if (h.size() > limits.max_tensors + 1)
      return header_error(label, std::to_string(h.size()) + " header entries exceed the limit of " +
                                     std::to_string(limits.max_tensors));
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (it.key() == "__metadata__") {
        if (!it.value().is_object()) return header_error(label, "__metadata__ is not a JSON object");
        for (auto m = it.value().begin(); m != it.value().end(); ++m)
          if (m.value().is_string()) metadata[m.key()] = m.value().get<std::string>();
        continue;  // non-string metadata values are ignored: metadata never drives loading
      }
      TensorEntry e;
      RFA_TRY(parse_entry(label, it.key(), it.value(), data_bytes, limits, e));
      tensors.push_back(std::move(e));
    }
  } catch (const std::exception& ex) {
    return header_error(label, std::string("header could not be parsed: ") + ex.what());
  } catch (...) {
    return header_error(label, "header could not be parsed");
  }
  // No two non-empty tensors may share bytes.
  std::vector<const TensorEntry*> by_offset;
  for (const TensorEntry& e : tensors)
    if (e.end > e.begin) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorEntry* a = by_offset[i - 1];
    const TensorEntry* b = by_offset[i];
    if (b->begin < a->end)
      return tensor_error(label, b->name,
                          "bytes [" + std::to_string(b->begin) + ", " + std::to_string(b->end) +
                              ") overlap tensor '" + a->name + "' at [" + std::to_string(a->begin) +
                              ", " + std::to_string(a->end) + ")");
  }
  return Status::Ok();
}

namespace {

// Validates the 8-byte prefix against the total size; returns the header length.
Status check_prefix(const uint8_t* prefix8, uint64_t file_size, const std::string& label,
                    const SafetensorsLimits& limits, uint64_t& header_len) {
  if (file_size < 8)
    return header_error(label, "file is " + std::to_string(file_size) +
                                   " bytes, shorter than the 8-byte header length");
  header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | prefix8[i];
  if (header_len > file_size - 8)
    return header_error(label, "header length " + std::to_string(header_len) + " exceeds the " +
                                   std::to_string(file_size - 8) + " bytes that follow it (truncated or not a safetensors file)");
  if (header_len > limits.max_header_bytes)
    return header_error(label, "header length " + std::to_string(header_len) +
                                   " exceeds the limit of " + std::to_string(limits.max_header_bytes));
  if (header_len < 2) return header_error(label, "header length " + std::to_string(header_len) + " is too small for a JSON object");
  return Status::Ok();
}

}  // namespace

Result<SafetensorsFile> SafetensorsFile::from_memory(std::vector<uint8_t> bytes, const std::string& label,
                                                     const SafetensorsLimits& limits) {
  SafetensorsFile f;
  f.label_ = label;
  uint64_t header_len = 0;
  RFA_TRY(check_prefix(bytes.data(), bytes.size(), label, limits, header_len));
  std::string_view header((const char*)bytes.data() + 8, (size_t)header_len);
  f.data_start_ = 8 + header_len;
  RFA_TRY(parse_safetensors_header(header, bytes.size() - f.data_start_, label, limits, f.tensors_,
                                   f.metadata_));
  for (size_t i = 0; i < f.tensors_.size(); ++i) f.index_[f.tensors_[i].name] = i;
  f.mem_ = std::move(bytes);
  return f;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path, const SafetensorsLimits& limits) {
  // std::filesystem: 64-bit sizes and UTF-8 paths on every platform.
  std::error_code ec;
  const std::filesystem::path native = path_from_utf8(path);
  const auto status = std::filesystem::status(native, ec);
  if (ec || !std::filesystem::exists(status))
    return make_error(Code::io_error, path + ": cannot open: " + (ec ? ec.message() : std::strerror(ENOENT)));
  if (!std::filesystem::is_regular_file(status)) return make_error(Code::io_error, path + ": not a regular file");
  const uint64_t file_size = (uint64_t)std::filesystem::file_size(native, ec);
  if (ec) return make_error(Code::io_error, path + ": cannot tell size: " + ec.message());
  std::FILE* fp = open_file(path, "rb");
  if (!fp) return make_error(Code::io_error, path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{fp};
  uint8_t prefix[8] = {};
  size_t got = std::fread(prefix, 1, 8, fp);
  uint64_t header_len = 0;
  RFA_TRY(check_prefix(prefix, got < 8 ? got : file_size, path, limits, header_len));
  std::string header((size_t)header_len, '\0');
  if (std::fread(header.data(), 1, header.size(), fp) != header.size())
    return make_error(Code::io_error, path + ": short read of the " + std::to_string(header_len) + "-byte header");
  SafetensorsFile f;
  f.label_ = path;
  f.path_ = path;
  f.data_start_ = 8 + header_len;
  RFA_TRY(parse_safetensors_header(header, file_size - f.data_start_, path, limits, f.tensors_, f.metadata_));
  for (size_t i = 0; i < f.tensors_.size(); ++i) f.index_[f.tensors_[i].name] = i;
  return f;
}

const TensorEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Status SafetensorsFile::read_raw(const TensorEntry& e, std::vector<uint8_t>& out) const {
  const uint64_t n = e.end - e.begin;
  if (path_.empty()) {
    // Validated at parse: data_start_ + end <= mem_.size().
    out.assign(mem_.begin() + (ptrdiff_t)(data_start_ + e.begin), mem_.begin() + (ptrdiff_t)(data_start_ + e.end));
    return Status::Ok();
  }
  std::FILE* fp = open_file(path_, "rb");
  if (!fp) return make_error(Code::io_error, path_ + ": cannot reopen: " + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{fp};
  out.resize((size_t)n);
  if (seek_file(fp, data_start_ + e.begin) != 0)
    return make_error(Code::io_error, path_ + ": tensor '" + e.name + "': cannot seek");
  if (n > 0 && std::fread(out.data(), 1, (size_t)n, fp) != (size_t)n)
    return make_error(Code::io_error, path_ + ": tensor '" + e.name + "': short read (file changed?)");
  return Status::Ok();
}

namespace {

template <typename T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename Out>
void convert(const TensorEntry& e, const std::vector<uint8_t>& raw, std::vector<Out>& out) {
  const size_t n = (size_t)e.numel();
  out.resize(n);
  const uint8_t* p = raw.data();
  switch (e.dtype) {
    case DType::f32:
      for (size_t i = 0; i < n; ++i) out[i] = (Out)load_le<float>(p + 4 * i);
      break;
    case DType::f16:
      for (size_t i = 0; i < n; ++i) out[i] = (Out)half_to_float(load_le<uint16_t>(p + 2 * i));
      break;
    case DType::bf16:
      for (size_t i = 0; i < n; ++i) out[i] = (Out)bf16_to_float(load_le<uint16_t>(p + 2 * i));
      break;
    case DType::f64:
      for (size_t i = 0; i < n; ++i) out[i] = (Out)load_le<double>(p + 8 * i);
      break;
    case DType::i64:
      for (size_t i = 0; i < n; ++i) out[i] = (Out)load_le<int64_t>(p + 8 * i);
      break;
    case DType::i32:
      for (size_t i = 0; i < n; ++i) out[i] = (Out)load_le<int32_t>(p + 4 * i);
      break;
  }
}

}  // namespace

Result<HostTensor> SafetensorsFile::read_f32(const std::string& name) const {
  const TensorEntry* e = find(name);
  if (!e) return make_error(Code::model_error, label_ + ": tensor '" + name + "' not found");
  std::vector<uint8_t> raw;
  RFA_TRY(read_raw(*e, raw));
  HostTensor t;
  t.shape = e->shape;
  convert(*e, raw, t.data);
  return t;
}

Result<std::vector<double>> SafetensorsFile::read_f64(const std::string& name) const {
  const TensorEntry* e = find(name);
  if (!e) return make_error(Code::model_error, label_ + ": tensor '" + name + "' not found");
  std::vector<uint8_t> raw;
  RFA_TRY(read_raw(*e, raw));
  std::vector<double> out;
  convert(*e, raw, out);
  return out;
}

Status check_safetensors_memory(const uint8_t* data, size_t size) {
  try {
    auto f = SafetensorsFile::from_memory(std::vector<uint8_t>(data, data + size), "<memory>");
    if (!f) return f.status();
    for (const TensorEntry& e : f->tensors()) {
      auto t = f->read_f32(e.name);
      if (!t) return t.status();
      auto d = f->read_f64(e.name);
      if (!d) return d.status();
    }
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return make_error(Code::out_of_memory, "<memory>: out of host memory");
  }
}

// ---- writing ---------------------------------------------------------------------------------

Result<std::vector<uint8_t>> encode_safetensors(const std::map<std::string, TensorToWrite>& tensors,
                                                const std::map<std::string, std::string>& metadata) {
  try {
    json header = json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::vector<uint8_t> data;
    for (const auto& [name, t] : tensors) {
      if (name == "__metadata__")
        return make_error(Code::invalid_argument, "write_safetensors: '__metadata__' is not a tensor name");
      int64_t n = 1;
      for (int64_t d : t.shape) {
        if (d < 0) return make_error(Code::invalid_argument, "write_safetensors: tensor '" + name + "': negative dimension");
        n *= d;
      }
      if ((size_t)n != t.data.size())
        return make_error(Code::invalid_argument, "write_safetensors: tensor '" + name + "': shape " +
                                                      shape_str(t.shape) + " needs " + std::to_string(n) +
                                                      " values, " + std::to_string(t.data.size()) + " given");
      const size_t begin = data.size();
      const size_t es = dtype_size(t.dtype);
      data.resize(begin + es * (size_t)n);
      uint8_t* p = data.data() + begin;
      for (size_t i = 0; i < (size_t)n; ++i) {
        const float v = t.data[i];
        switch (t.dtype) {
          case DType::f32: std::memcpy(p + 4 * i, &v, 4); break;
          case DType::f16: { uint16_t h = float_to_half(v); std::memcpy(p + 2 * i, &h, 2); break; }
          case DType::bf16: { uint16_t h = float_to_bf16(v); std::memcpy(p + 2 * i, &h, 2); break; }
          case DType::f64: { double d = v; std::memcpy(p + 8 * i, &d, 8); break; }
          case DType::i64: { int64_t k = (int64_t)v; std::memcpy(p + 8 * i, &k, 8); break; }
          case DType::i32: { int32_t k = (int32_t)v; std::memcpy(p + 4 * i, &k, 4); break; }
        }
      }
      header[name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {(uint64_t)begin, (uint64_t)data.size()}}};
    }
    std::string h = header.dump(-1, ' ', false, json::error_handler_t::strict);
    while (h.size() % 8 != 0) h.push_back(' ');  // the usual 8-byte alignment of the data area
    std::vector<uint8_t> out(8 + h.size() + data.size());
    uint64_t hl = h.size();
    for (int i = 0; i < 8; ++i) out[i] = (uint8_t)(hl >> (8 * i));
    std::memcpy(out.data() + 8, h.data(), h.size());
    if (!data.empty()) std::memcpy(out.data() + 8 + h.size(), data.data(), data.size());
    return out;
  } catch (const std::exception& ex) {
    return make_error(Code::invalid_argument, std::string("write_safetensors: ") + ex.what());
  }
}

Status write_safetensors(const std::string& path, const std::map<std::string, TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  auto bytes = encode_safetensors(tensors, metadata);
  if (!bytes) return bytes.status();
  return write_file_atomic(path, std::string_view((const char*)bytes->data(), bytes->size()));
}

}  // namespace rfa
