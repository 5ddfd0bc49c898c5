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
constexpr uint32_t kOpCapability = 17, kOpExecutionMode = 16, kOpExecutionModeId = 331, kOpTypeBool = 20,
                   kOpTypeMatrix = 24, kOpConstantTrue = 41, kOpConstantFalse = 42, kOpConstantComposite = 44,
                   kOpSpecConstantTrue = 48, kOpSpecConstantFalse = 49, kOpSpecConstant = 50,
                   kOpSpecConstantComposite = 51, kOpSpecConstantOp = 52;
constexpr uint32_t kDecorationArrayStride = 6, kDecorationBinding = 33, kDecorationOffset = 35, kDecorationSpecId = 1,
                   kDecorationBuiltIn = 11, kBuiltInWorkgroupSize = 25;
// The built-ins by which a shader numbers its threads by subgroup lanes (ShaderFootprint).
constexpr uint32_t kBuiltInNumSubgroups = 38, kBuiltInSubgroupId = 40, kBuiltInSubgroupLocalInvocationId = 41;
constexpr uint32_t kOpExtension = 10;
constexpr uint32_t kStoragePushConstant = 9, kStorageWorkgroup = 4;
constexpr uint32_t kModeLocalSize = 17, kModeLocalSizeId = 38;

struct Module {
  std::map<uint32_t, std::vector<uint32_t>> types;  // result id -> the instruction's words
  std::map<uint32_t, uint32_t> constants;           // result id -> first literal word
  std::map<uint32_t, uint32_t> array_stride;        // array type id -> ArrayStride
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> member_offset;  // (struct id, member) -> Offset
  uint32_t max_binding_plus_one = 0;
  uint32_t push_pointer_type = 0;  // the OpTypePointer of the PushConstant variable
  // For the footprint: constants of any kind (their whole instruction), spec ids, the workgroup size.
  std::map<uint32_t, std::vector<uint32_t>> values;  // result id -> OpConstant*/OpSpecConstant* words
  std::map<uint32_t, uint32_t> spec_id;              // result id -> SpecId
  std::vector<uint32_t> workgroup_pointer_types;     // OpTypePointer of each Workgroup variable
  std::vector<uint32_t> capabilities;
  std::vector<std::string> extensions;
  bool lane_builtins = false;      // SubgroupId, SubgroupLocalInvocationId or NumSubgroups declared
  uint32_t workgroup_size_id = 0;  // the constant decorated BuiltIn WorkgroupSize (overrides the mode)
  uint32_t local_size[3] = {1, 1, 1};
  uint32_t local_size_id[3] = {0, 0, 0};
};

Status parse(const uint32_t* w, size_t count, const char* name, Module& m) {
  if (count < 5 || w[0] != kMagic)
    return Status(Code::unsupported, std::string("shader ") + name + ": not SPIR-V");
  for (size_t i = 5; i < count;) {
    const uint32_t op = w[i] & 0xffff, len = w[i] >> 16;
    if (len == 0 || i + len > count)
      return Status(Code::unsupported, std::string("shader ") + name + ": truncated SPIR-V instruction");
    const uint32_t* ins = w + i;
    if (op == kOpCapability && len >= 2) {
      m.capabilities.push_back(ins[1]);
    } else if (op == kOpExtension && len >= 2) {
      // A nul-terminated literal string packed little-endian into the remaining words.
      std::string e;
      for (uint32_t k = 1; k < len; ++k)
        for (int b = 0; b < 4; ++b) {
          const char c = (char)((ins[k] >> (8 * b)) & 0xff);
          if (c == 0) k = len, b = 4;
          else e += c;
        }
      m.extensions.push_back(e);
    } else if (op == kOpDecorate && len >= 4 && ins[2] == kDecorationBuiltIn &&
               (ins[3] == kBuiltInSubgroupId || ins[3] == kBuiltInSubgroupLocalInvocationId ||
                ins[3] == kBuiltInNumSubgroups)) {
      m.lane_builtins = true;
    } else if (op == kOpExecutionMode && len >= 6 && ins[2] == kModeLocalSize) {
      for (int k = 0; k < 3; ++k) m.local_size[k] = ins[3 + k];
    } else if (op == kOpExecutionModeId && len >= 6 && ins[2] == kModeLocalSizeId) {
      for (int k = 0; k < 3; ++k) m.local_size_id[k] = ins[3 + k];
    } else if (op == kOpDecorate && len >= 4 && ins[2] == kDecorationSpecId) {
      m.spec_id[ins[1]] = ins[3];
    } else if (op == kOpDecorate && len >= 4 && ins[2] == kDecorationBuiltIn && ins[3] == kBuiltInWorkgroupSize) {
      m.workgroup_size_id = ins[1];
    } else if (op == kOpDecorate && len >= 4 && ins[2] == kDecorationBinding) {
      m.max_binding_plus_one = std::max(m.max_binding_plus_one, ins[3] + 1);
    } else if (op == kOpDecorate && len >= 4 && ins[2] == kDecorationArrayStride) {
      m.array_stride[ins[1]] = ins[3];
    } else if (op == kOpMemberDecorate && len >= 5 && ins[3] == kDecorationOffset) {
      m.member_offset[{ins[1], ins[2]}] = ins[4];
    } else if (op == kOpTypeInt || op == kOpTypeFloat || op == kOpTypeVector || op == kOpTypeArray ||
               op == kOpTypeStruct || op == kOpTypePointer || op == kOpTypeBool || op == kOpTypeMatrix) {
      m.types[ins[1]] = std::vector<uint32_t>(ins, ins + len);
    } else if (op == kOpConstant && len >= 4) {
      m.constants[ins[2]] = ins[3];
      m.values[ins[2]] = std::vector<uint32_t>(ins, ins + len);
    } else if ((op == kOpConstantTrue || op == kOpConstantFalse || op == kOpConstantComposite ||
                op == kOpSpecConstantTrue || op == kOpSpecConstantFalse || op == kOpSpecConstant ||
                op == kOpSpecConstantComposite || op == kOpSpecConstantOp) && len >= 3) {
      m.values[ins[2]] = std::vector<uint32_t>(ins, ins + len);
    } else if (op == kOpVariable && len >= 4 && ins[3] == kStoragePushConstant) {
      m.push_pointer_type = ins[1];
    } else if (op == kOpVariable && len >= 4 && ins[3] == kStorageWorkgroup) {
      m.workgroup_pointer_types.push_back(ins[1]);
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

// A specialization-time value: constants, spec constants (overridden from `spec`) and the integer
// and boolean OpSpecConstantOp expressions glslang emits for array lengths such as BK * D.
struct Evaluator {
  const Module& m;
  const std::vector<uint32_t>& spec;
  const char* name;
  int depth = 0;

  Result<int64_t> eval(uint32_t id) {
    auto fail = [&](const std::string& what) {
      return Status(Code::unsupported, std::string("shader ") + name + ": cannot evaluate " + what + " (id " +
                                           std::to_string(id) + ") for the limit checks");
    };
    if (++depth > 64) return fail("a constant expression this deep");
    struct Guard { int& d; ~Guard() { --d; } } guard{depth};
    auto it = m.values.find(id);
    if (it == m.values.end()) return fail("a value that is not a constant");
    const std::vector<uint32_t>& w = it->second;
    const uint32_t op = w[0] & 0xffff;
    auto overridden = [&](int64_t dflt) -> int64_t {
      auto s = m.spec_id.find(id);
      if (s != m.spec_id.end() && s->second < spec.size()) return (int64_t)(int32_t)spec[s->second];
      return dflt;
    };
    switch (op) {
      case kOpConstant: return (int64_t)(int32_t)w[3];
      case kOpConstantTrue: return 1;
      case kOpConstantFalse: return 0;
      case kOpSpecConstantTrue: return overridden(1) != 0;
      case kOpSpecConstantFalse: return overridden(0) != 0;
      case kOpSpecConstant: return overridden(w.size() > 3 ? (int64_t)(int32_t)w[3] : 0);
      case kOpSpecConstantOp: break;
      default: return fail("a composite constant");
    }
    if (w.size() < 5) return fail("a malformed OpSpecConstantOp");
    const uint32_t code = w[3];
    std::vector<int64_t> a;
    if (code != 81) {  // OpCompositeExtract takes a composite and a literal index, not values
      for (size_t k = 4; k < w.size(); ++k) {
        auto v = eval(w[k]);
        if (!v) return v.status();
        a.push_back(*v);
      }
    }
    auto need = [&](size_t n) { return a.size() >= n; };
    switch (code) {
      case 113: case 114: case 124: if (need(1)) return a[0]; break;  // UConvert, SConvert, Bitcast
      case 126: if (need(1)) return -a[0]; break;                     // SNegate
      case 128: if (need(2)) return a[0] + a[1]; break;                // IAdd
      case 130: if (need(2)) return a[0] - a[1]; break;                // ISub
      case 132: if (need(2)) return a[0] * a[1]; break;                // IMul
      case 134: case 135:                                              // UDiv, SDiv
        if (need(2) && a[1] != 0) return a[0] / a[1];
        break;
      case 137: case 138: case 139:                                    // UMod, SRem, SMod
        if (need(2) && a[1] != 0) return a[0] % a[1];
        break;
      case 166: if (need(2)) return (int64_t)(a[0] || a[1]); break;    // LogicalOr
      case 167: if (need(2)) return (int64_t)(a[0] && a[1]); break;    // LogicalAnd
      case 168: if (need(1)) return (int64_t)!a[0]; break;             // LogicalNot
      case 164: case 170: if (need(2)) return (int64_t)(a[0] == a[1]); break;  // LogicalEqual, IEqual
      case 165: case 171: if (need(2)) return (int64_t)(a[0] != a[1]); break;  // LogicalNotEqual, INotEqual
      case 169: if (need(3)) return a[0] ? a[1] : a[2]; break;          // Select
      case 172: case 173: if (need(2)) return (int64_t)(a[0] > a[1]); break;
      case 174: case 175: if (need(2)) return (int64_t)(a[0] >= a[1]); break;
      case 176: case 177: if (need(2)) return (int64_t)(a[0] < a[1]); break;
      case 178: case 179: if (need(2)) return (int64_t)(a[0] <= a[1]); break;
      case 194: case 195: if (need(2)) return a[0] >> a[1]; break;     // ShiftRightLogical/Arithmetic
      case 196: if (need(2)) return a[0] << a[1]; break;               // ShiftLeftLogical
      case 197: if (need(2)) return a[0] | a[1]; break;                // BitwiseOr
      case 198: if (need(2)) return a[0] ^ a[1]; break;                // BitwiseXor
      case 199: if (need(2)) return a[0] & a[1]; break;                // BitwiseAnd
      case 81: {                                                       // CompositeExtract
        if (w.size() < 6) break;
        auto c = m.values.find(w[4]);
        if (c == m.values.end()) break;
        const uint32_t cop = c->second[0] & 0xffff;
        if (cop != kOpConstantComposite && cop != kOpSpecConstantComposite) break;
        if (3 + w[5] >= c->second.size()) break;
        return eval(c->second[3 + w[5]]);
      }
      default: break;
    }
    return fail("OpSpecConstantOp " + std::to_string(code));
  }
};

// Bytes and alignment of a shared (Workgroup) variable's type: natural sizes, vec3 aligned as
// vec4, arrays of element-size stride, as drivers lay out shared memory in practice.
Status shared_size(const Module& m, Evaluator& ev, uint32_t id, uint64_t* size, uint64_t* align) {
  auto bad = [&](const char* what) {
    return Status(Code::unsupported, std::string("shader ") + ev.name + ": a shared variable has " + what);
  };
  auto it = m.types.find(id);
  if (it == m.types.end()) return bad("a type this reader does not size");
  const std::vector<uint32_t>& t = it->second;
  const uint32_t op = t[0] & 0xffff;
  if (op == kOpTypeBool) { *size = *align = 4; return Status::Ok(); }
  if (op == kOpTypeInt || op == kOpTypeFloat) { *size = *align = t[2] / 8; return Status::Ok(); }
  if (op == kOpTypeVector || op == kOpTypeMatrix) {
    uint64_t s = 0, a = 0;
    RFA_TRY(shared_size(m, ev, t[2], &s, &a));
    *size = s * t[3];
    *align = op == kOpTypeVector ? s * (t[3] == 3 ? 4 : t[3]) : a;
    return Status::Ok();
  }
  if (op == kOpTypeArray) {
    uint64_t s = 0, a = 0;
    RFA_TRY(shared_size(m, ev, t[2], &s, &a));
    auto len = ev.eval(t[3]);
    if (!len) return len.status();
    if (*len < 0) return bad("a negative array length");
    const uint64_t stride = (s + a - 1) / a * a;
    *size = stride * (uint64_t)*len;
    *align = a;
    return Status::Ok();
  }
  if (op == kOpTypeStruct) {
    uint64_t end = 0, al = 1;
    for (size_t k = 2; k < t.size(); ++k) {
      uint64_t s = 0, a = 0;
      RFA_TRY(shared_size(m, ev, t[k], &s, &a));
      end = (end + a - 1) / a * a + s;
      al = std::max(al, a);
    }
    *size = (end + al - 1) / al * al;
    *align = al;
    return Status::Ok();
  }
  return bad("a type this reader does not size");
}

}  // namespace

Result<ShaderFootprint> shader_footprint(const uint32_t* words, size_t count, const char* name,
                                         const std::vector<uint32_t>& spec) {
  Module m;
  RFA_TRY(parse(words, count, name, m));
  Evaluator ev{m, spec, name};
  ShaderFootprint out;
  out.capabilities = m.capabilities;
  out.extensions = m.extensions;
  out.numbers_subgroup_lanes = m.lane_builtins;
  out.spirv_version = words[1];
  out.local_size_id = m.local_size_id[0] || m.local_size_id[1] || m.local_size_id[2];
  for (int k = 0; k < 3; ++k) out.local_size[k] = m.local_size[k];
  for (int k = 0; k < 3; ++k) {
    if (!m.local_size_id[k]) continue;
    auto v = ev.eval(m.local_size_id[k]);
    if (!v) return v.status();
    out.local_size[k] = (uint32_t)*v;
  }
  // glslang's local_size_x_id: a (spec) constant composite decorated WorkgroupSize, which the
  // spec says takes precedence over the execution mode.
  if (m.workgroup_size_id) {
    auto it = m.values.find(m.workgroup_size_id);
    if (it == m.values.end() || it->second.size() < 6)
      return Status(Code::unsupported, std::string("shader ") + name + ": WorkgroupSize is not a constant composite");
    for (int k = 0; k < 3; ++k) {
      auto v = ev.eval(it->second[3 + k]);
      if (!v) return v.status();
      out.local_size[k] = (uint32_t)*v;
    }
  }
  for (uint32_t ptr : m.workgroup_pointer_types) {
    auto p = m.types.find(ptr);
    if (p == m.types.end() || p->second.size() < 4)
      return Status(Code::unsupported, std::string("shader ") + name + ": shared variable without its type");
    uint64_t s = 0, a = 0;
    RFA_TRY(shared_size(m, ev, p->second[3], &s, &a));
    out.shared_bytes += s;
  }
  return out;
}

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
