#include "model/npy.hpp"

#include <cstring>
#include <limits>

#include "model/file_util.hpp"

namespace rfa {

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

constexpr char kMagic[] = "\x93NUMPY";

Status bad(const std::string& label, const std::string& what) {
  return make_error(Code::input_error, label + ": " + what);
}

// A tiny parser for the Python dict literal of a .npy header:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(std::string_view s, const std::string& label) : s_(s), label_(label) {}

  Status parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    ws();
    if (!eat('{')) return err("header does not start with '{'");
    for (;;) {
      ws();
      if (eat('}')) break;
      std::string key;
      RFA_TRY(str(key));
      ws();
      if (!eat(':')) return err("expected ':' after key '" + key + "'");
      ws();
      if (key == "descr") {
        if (!str(descr).ok()) return err("descr: expected a quoted dtype string such as '<f4'");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (lit("True")) fortran = true;
        else if (lit("False")) fortran = false;
        else return err("fortran_order: expected True or False");
        have_fortran = true;
      } else if (key == "shape") {
        RFA_TRY(tuple(shape));
        have_shape = true;
      } else {
        return err("unexpected header key '" + key + "' (expected descr, fortran_order, shape)");
      }
      ws();
      if (eat(',')) continue;
      ws();
      if (eat('}')) break;
      return err("expected ',' or '}' in the header");
    }
    for (; i_ < s_.size(); ++i_)
      if (s_[i_] != ' ' && s_[i_] != '\n' && s_[i_] != '\t' && s_[i_] != '\r' && s_[i_] != '\0')
        return err("unexpected text after the header dict");
    if (!have_descr || !have_fortran || !have_shape)
      return err("header lacks one of the keys descr, fortran_order, shape");
    return Status::Ok();
  }

 private:
  Status err(const std::string& what) const { return bad(label_, "malformed .npy header: " + what); }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool lit(std::string_view w) {
    if (s_.substr(i_, w.size()) == w) {
      i_ += w.size();
      return true;
    }
    return false;
  }
  Status str(std::string& out) {
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return err("expected a quoted string");
    char q = s_[i_++];
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') return err("escapes are not supported in header strings");
      ++i_;
    }
    if (i_ >= s_.size()) return err("unterminated string");
    out.assign(s_.substr(start, i_ - start));
    ++i_;
    return Status::Ok();
  }
  Status tuple(std::vector<int64_t>& shape) {
    shape.clear();
    if (!eat('(')) return err("shape: expected a tuple");
    for (;;) {
      ws();
      if (eat(')')) return Status::Ok();
      if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') return err("shape: expected a non-negative integer");
      uint64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (v > ((uint64_t)std::numeric_limits<int64_t>::max() - 9) / 10) return err("shape: dimension too large");
        v = v * 10 + (uint64_t)(s_[i_++] - '0');
      }
      eat('L');  // Python 2 long literals
      if (shape.size() >= 32) return err("shape: more than 32 dimensions");
      shape.push_back((int64_t)v);
      ws();
      if (eat(',')) continue;
      ws();
      if (eat(')')) return Status::Ok();
      return err("shape: expected ',' or ')'");
    }
  }

  std::string_view s_;
  const std::string& label_;
  size_t i_ = 0;
};

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

Result<NpyArray> parse_npy(const uint8_t* data, size_t size, const std::string& label) {
  try {
    if (size < 10 || std::memcmp(data, kMagic, 6) != 0) return bad(label, "not a .npy file (magic \\x93NUMPY missing)");
    const int major = data[6], minor = data[7];
    if (!(major >= 1 && major <= 3) || minor != 0)
      return bad(label, ".npy version " + std::to_string(major) + "." + std::to_string(minor) +
                            " unsupported (expected 1.0, 2.0 or 3.0)");
    uint64_t hlen, hstart;
    if (major == 1) {
      hlen = (uint64_t)data[8] | ((uint64_t)data[9] << 8);
      hstart = 10;
    } else {
      if (size < 12) return bad(label, "file too short for a version 2 header");
      hlen = (uint64_t)data[8] | ((uint64_t)data[9] << 8) | ((uint64_t)data[10] << 16) | ((uint64_t)data[11] << 24);
      hstart = 12;
    }
    if (hlen > size - hstart)
      return bad(label, "header length " + std::to_string(hlen) + " exceeds the " + std::to_string(size - hstart) +
                            " bytes that follow (truncated file?)");
    NpyArray a;
    bool fortran = false;
    HeaderParser hp(std::string_view((const char*)data + hstart, (size_t)hlen), label);
    RFA_TRY(hp.parse(a.descr, fortran, a.shape));
    if (fortran)
      return bad(label, "fortran_order = True unsupported: save a C-ordered array (np.ascontiguousarray)");
    size_t item = 0;
    if (a.descr.size() == 3 && (a.descr[0] == '>'))
      return bad(label, "big-endian dtype '" + a.descr + "' unsupported: convert with arr.astype('<" +
                            a.descr.substr(1) + "')");
    if (a.descr == "<f4") item = 4;
    else if (a.descr == "<f8") item = 8;
    else if (a.descr == "<i4") item = 4, a.is_integer = true;
    else if (a.descr == "<i8") item = 8, a.is_integer = true;
    else return bad(label, "dtype '" + a.descr + "' unsupported (expected <f4, <f8, <i4 or <i8)");
    uint64_t n = 1;
    bool zero = false;
    for (int64_t d : a.shape) {
      if (d == 0) zero = true;
      else if (n > std::numeric_limits<uint64_t>::max() / 8 / (uint64_t)d) return bad(label, "shape has an absurd element count");
      else n *= (uint64_t)d;
    }
    if (zero) n = 0;
    const uint64_t body = size - hstart - hlen;
    if (n * item != body)
      return bad(label, "shape and dtype '" + a.descr + "' need " + std::to_string(n * item) + " data bytes, " +
                            std::to_string(body) + " found");
    const uint8_t* p = data + hstart + hlen;
    if (a.is_integer) {
      a.ints.resize((size_t)n);
      for (size_t i = 0; i < (size_t)n; ++i) a.ints[i] = item == 4 ? load<int32_t>(p + 4 * i) : load<int64_t>(p + 8 * i);
    } else {
      a.values.resize((size_t)n);
      for (size_t i = 0; i < (size_t)n; ++i) a.values[i] = item == 4 ? (double)load<float>(p + 4 * i) : load<double>(p + 8 * i);
    }
    return a;
  } catch (const std::bad_alloc&) {
    return make_error(Code::out_of_memory, label + ": out of host memory");
  }
}

Result<NpyArray> read_npy(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return bytes.status();
  return parse_npy(bytes->data(), bytes->size(), path);
}

namespace {

Status write_npy(const std::string& path, const std::vector<int64_t>& shape, const char* descr, const void* data,
                 size_t count, size_t item) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return make_error(Code::invalid_argument, path + ": negative dimension in shape");
    n *= (uint64_t)d;
  }
  if (n != count)
    return make_error(Code::invalid_argument, path + ": shape needs " + std::to_string(n) + " values, " +
                                                  std::to_string(count) + " given");
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) dict += ", ";  // appended apart: g++ 12's -Wrestrict misfires on (", " + std::string)
    dict += std::to_string(shape[i]);
  }
  if (shape.size() == 1) dict += ",";  // numpy writes "(3,)" for one dimension, "(2, 3)" for more
  dict += "), }";
  // Pad so that magic + lengths + header is a multiple of 64, ending with '\n' (numpy >= 1.24 style).
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict.push_back('\n');
  if (dict.size() > 65535) return make_error(Code::invalid_argument, path + ": shape too long for a .npy v1 header");
  std::string out;
  out.reserve(10 + dict.size() + count * item);
  out.append(kMagic, 6);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back((char)(dict.size() & 0xff));
  out.push_back((char)(dict.size() >> 8));
  out += dict;
  out.append((const char*)data, count * item);
  return write_file_atomic(path, out);
}

}  // namespace

Status write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& data) {
  return write_npy(path, shape, "<f4", data.data(), data.size(), 4);
}

Status write_npy_i64(const std::string& path, const std::vector<int64_t>& shape, const std::vector<int64_t>& data) {
  return write_npy(path, shape, "<i8", data.data(), data.size(), 8);
}

}  // namespace rfa
