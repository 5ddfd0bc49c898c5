// A minimal SPIR-V reader: one pass over the instructions collects the Binding decorations, the
// member offsets and the types, then the push-constant variable's struct is sized. Enough for the
// scalar, vector, array and struct members our push blocks use; anything else is an error, not a guess.
#include "gpu/spirv_reflect.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace rfa::gpu {

namespace {

// Opcodes, decorations and storage classes from the SPIR-V specification (unified 1.6), chapter
// "Binary Form".
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeArray = 28, kOpTypeStruct = 30,
                   kOpTypePointer = 32, kOpConstant = 43, kOpVariable = 59, kOpDecorate = 71, kOpMemberDecorate = 72;
constexpr uint32_t kDecorationArrayStride = 6, kDecorationBinding = 33, kDecorationOffset = 35;
constexpr uint32_t kStoragePushConstant = 9;

struct Module {
  std::map<uint32_t, std::vector<uint32_t>> types;  // result id -> the instruction's words
  std::map<uint32_t, uint32_t> constants;           // result id -> first literal word
  std::map<uint32_t, uint32_t> array_stride;        // array type id -> ArrayStride
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> member_offset;  // (struct id, member) -> Offset
  uint32_t max_binding_plus_one = 0;
  uint32_t push_pointer_type = 0;  // the OpTypePointer of the PushConstant variable
};

Status parse(const uint32_t* w, size_t count, const char* name, Module& m) {
  if (count < 5 || w[0] != kMagic)
    return Status(Code::unsupported, std::string("shader ") + name + ": not SPIR-V");
  for (size_t i = 5; i < count;) {
    const uint32_t op = w[i] & 0xffff, len = w[i] >> 16;
    if (len == 0 || i + len > count)
      return Status(Code::unsupported, std::string("shader ") + name + ": truncated SPIR-V instruction");
    const uint32_t* ins = w + i;
    if (op == kOpDecorate && len >= 4 && ins[2] == kDecorationBinding) {
      m.max_binding_plus_one = std::max(m.max_binding_plus_one, ins[3] + 1);
    } else if (op == kOpDecorate && len >= 4 && ins[2] == kDecorationArrayStride) {
      m.array_stride[ins[1]] = ins[3];
    } else if (op == kOpMemberDecorate && len >= 5 && ins[3] == kDecorationOffset) {
      m.member_offset[{ins[1], ins[2]}] = ins[4];
    } else if (op == kOpTypeInt || op == kOpTypeFloat || op == kOpTypeVector || op == kOpTypeArray ||
               op == kOpTypeStruct || op == kOpTypePointer) {
      m.types[ins[1]] = std::vector<uint32_t>(ins, ins + len);
    } else if (op == kOpConstant && len >= 4) {
      m.constants[ins[2]] = ins[3];
    } else if (op == kOpVariable && len >= 4 && ins[3] == kStoragePushConstant) {
      m.push_pointer_type = ins[1];
    }
    i += len;
  }
  return Status::Ok();
}

// Bytes a value of type `id` occupies in the push block (its explicit layout).
Result<uint32_t> size_of(const Module& m, uint32_t id, const char* name) {
  auto bad = [&](const char* what) {
    return Status(Code::unsupported, std::string("shader ") + name + ": push constant block has " + what);
  };
  auto it = m.types.find(id);
  if (it == m.types.end()) return bad("a member of unknown type");
  const std::vector<uint32_t>& t = it->second;
  const uint32_t op = t[0] & 0xffff;
  if (op == kOpTypeInt || op == kOpTypeFloat) return t[2] / 8;
  if (op == kOpTypeVector) {
    auto c = size_of(m, t[2], name);
    if (!c) return c.status();
    return *c * t[3];
  }
  if (op == kOpTypeArray) {
    auto len = m.constants.find(t[3]);
    auto stride = m.array_stride.find(id);
    if (len == m.constants.end() || stride == m.array_stride.end()) return bad("an array of unknown length or stride");
    return len->second * stride->second;
  }
  if (op == kOpTypeStruct) {
    uint32_t end = 0;
    for (uint32_t k = 0; k + 2 < t.size(); ++k) {
      auto off = m.member_offset.find({id, k});
      if (off == m.member_offset.end()) return bad("a member without an Offset");
      auto s = size_of(m, t[2 + k], name);
      if (!s) return s.status();
      end = std::max(end, off->second + *s);
    }
    return end;
  }
  return bad("a member type this reader does not size");
}

}  // namespace

Result<ShaderInterface> reflect_shader(const uint32_t* words, size_t count, const char* name) {
  Module m;
  RFA_TRY(parse(words, count, name, m));
  ShaderInterface out;
  out.bindings = m.max_binding_plus_one;
  if (m.push_pointer_type) {
    auto ptr = m.types.find(m.push_pointer_type);
    if (ptr == m.types.end() || ptr->second.size() < 4)
      return Status(Code::unsupported, std::string("shader ") + name + ": push constant variable without its type");
    auto bytes = size_of(m, ptr->second[3], name);
    if (!bytes) return bytes.status();
    out.push_bytes = *bytes;
  }
  return out;
}

}  // namespace rfa::gpu
