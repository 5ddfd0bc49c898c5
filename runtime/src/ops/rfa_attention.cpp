#include "ops/rfa_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gpu/pipeline.hpp"
#include "gpu/shader_registry.hpp"
#include "kernel_ids.h"
#include "model/limits.hpp"
#include "mechanisms/mechanism.hpp"
#include "push_layouts.h"

namespace rfa::ops {

namespace {

using namespace shader;
// Split-k: at most this many splits, and about this many workgroups in all (enough to fill a
// large GPU twice over: an H100 has 132 SMs), each split keeping at least kMinSplitKeys keys.
constexpr uint32_t kMaxSplits = 64, kSplitWorkgroups = 512, kMinSplitKeys = 256;
Status check_dims(const AttentionParams& p) {
  if (p.heads < 1) return make_error(Code::invalid_argument, "rfa attention: heads must be >= 1");
  // Any D up to kMaxHeadDim: the kernels take D as a specialisation constant, and the choosers
  // pick divisors of D for the per-thread chunks (merge_chunk_for, the tile's threads_per_row).
  if (p.dim < 1 || p.dim > kMaxHeadDim)
    return make_error(Code::unsupported, "rfa attention: head dim D = " + std::to_string(p.dim) + " (supported: 1 to " +
                                             std::to_string(kMaxHeadDim) + ")");
  const size_t HD = (size_t)p.heads * p.dim;
  if (p.head.size() != (size_t)p.heads || p.omega.size() != HD)
    return make_error(Code::invalid_argument, "rfa attention: params.head must have heads entries and params.omega heads*dim");
  for (const auto* g : {&p.norm_q, &p.norm_k, &p.norm_v, &p.norm_o})
    if (!g->empty() && g->size() != HD)
      return make_error(Code::invalid_argument, "rfa attention: a complex norm gain vector is not heads*dim long");
  return Status::Ok();
}

Status check_size(const gpu::Buffer& b, uint64_t bytes, const char* what) {
  if (!b.valid() || b.size < bytes)
    return make_error(Code::invalid_argument, std::string("rfa attention: buffer '") + what + "' holds " +
                                                  std::to_string(b.size) + " bytes, " + std::to_string(bytes) +
                                                  " needed");
  return Status::Ok();
}

}  // namespace

namespace {
// IEEE binary16 -> float (normals, subnormals, infinities, NaN), as unpackHalf2x16 does.
float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp((float)man, -24);
  else if (exp == 31) v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else v = std::ldexp((float)(man | 0x400), (int)exp - 25);
  return sign ? -v : v;
}
}  // namespace

void kv_to_floats(const AttentionCache& cache, const void* raw, size_t n, float* out) {
  if (!cache.kv_f16) {
    std::memcpy(out, raw, n * 8);
    return;
  }
  const auto* u = static_cast<const uint32_t*>(raw);
  for (size_t i = 0; i < n; ++i) {  // packHalf2x16: re in the low half, im in the high half
    out[2 * i] = half_to_float((uint16_t)(u[i] & 0xffff));
    out[2 * i + 1] = half_to_float((uint16_t)(u[i] >> 16));
  }
}

void split_timestamp(double t, float* hi, float* lo) {
  const float h = (float)t;
  *hi = h;
  *lo = (float)(t - (double)h);
}

Result<AttentionWeightsGpu> AttentionWeightsGpu::create(gpu::Context& ctx, const AttentionParams& p) {
  RFA_TRY(check_dims(p));
  const mech::Mechanism* m = mech::find_mechanism(p.variant);
  if (!m)
    return make_error(Code::invalid_argument, "rfa attention: unknown attention variant " + std::to_string((uint32_t)p.variant));
  RFA_TRY(m->check_params(p));
  const int D = p.dim;
  const size_t HD = (size_t)p.heads * D;
  std::vector<float> omega(2 * HD), shift(2 * HD), gains(4 * HD, 1.f), gain_o(HD, 1.f);
  for (size_t k = 0; k < HD; ++k) {
    split_timestamp(p.omega[k], &omega[2 * k], &omega[2 * k + 1]);  // same (hi, lo) split as times
    const double s = p.head[k / (size_t)D].lag_shift;
    // The shift rotation e^{i omega s} is per (head, dim): computed once here in double.
    shift[2 * k] = (float)std::cos(p.omega[k] * s);
    shift[2 * k + 1] = (float)std::sin(p.omega[k] * s);
  }
  const std::vector<double>* g[4] = {&p.norm_q, &p.norm_k, &p.norm_v, &p.norm_o};
  for (int w = 0; w < 4; ++w)
    if (!g[w]->empty())
      for (size_t k = 0; k < HD; ++k) gains[(size_t)w * HD + k] = (float)(*g[w])[k];
  for (size_t k = 0; k < HD; ++k) gain_o[k] = gains[3 * HD + k];

  AttentionWeightsGpu out;
  out.params_ = p;
  auto a = ctx.upload_new(m->layer_table(p), (std::string(m->key()) + " layer table").c_str());
  if (!a) return a.status();
  out.table_ = a.take();
  auto b = ctx.upload_new(omega, "rfa omega");
  if (!b) return b.status();
  out.omega_ = b.take();
  auto c = ctx.upload_new(shift, "rfa shift rotation");
  if (!c) return c.status();
  out.shift_rot_ = c.take();
  auto d = ctx.upload_new(gains, "rfa norm gains");
  if (!d) return d.status();
  out.gains_ = d.take();
  auto e = ctx.upload_new(gain_o, "rfa output norm gain");
  if (!e) return e.status();
  out.gain_o_ = e.take();
  if (p.phase == PhaseSource::accumulated_learned) {
    // Phi as (hi, lo) pairs: the scan adds steps in double-float, so a stored double keeps its bits.
    std::vector<float> steps(2 * p.step_table.size());
    for (size_t k = 0; k < p.step_table.size(); ++k) split_timestamp(p.step_table[k], &steps[2 * k], &steps[2 * k + 1]);
    auto f = ctx.upload_new(steps, "acc learned steps");
    if (!f) return f.status();
    out.steps_ = f.take();
  }
  return out;
}

Result<AttentionCache> AttentionCache::create(gpu::Context& ctx, uint32_t batch, uint32_t heads, uint32_t dim,
                                              uint32_t capacity, const char* label, uint32_t window, bool kv_f16,
                                              bool phase_ring) {
  if (batch == 0 || heads == 0 || dim == 0 || capacity == 0)
    return make_error(Code::invalid_argument, "rfa attention cache: batch, heads, dim and capacity must be >= 1");
  if (window > capacity)
    return make_error(Code::invalid_argument, "rfa attention cache: window " + std::to_string(window) +
                                                  " exceeds the ring's " + std::to_string(capacity) + " slots");
  const uint64_t cells = (uint64_t)batch * heads * capacity;
  if (cells * dim * 2 >= (1ull << 32))
    return make_error(Code::unsupported, "rfa attention cache: more than 2^32 floats per tensor (32-bit indexing)");
  AttentionCache c;
  c.batch = batch;
  c.heads = heads;
  c.dim = dim;
  c.capacity = capacity;
  c.window = window;
  c.kv_f16 = kv_f16;
  // Split-k: enough partial states for kSplitWorkgroups workgroups of kSplitRows rows.
  c.max_splits = std::max<uint32_t>(1, std::min<uint32_t>(kMaxSplits, kSplitWorkgroups / (batch * heads)));
  const uint64_t partial_floats = (uint64_t)batch * heads * kSplitRows * c.max_splits * (4 + 2 * dim);
  const uint64_t kv = cells * dim * c.kv_bytes_per_component();
  const std::string base = label ? label : "rfa cache";
  struct Item {
    gpu::Buffer* buf;
    uint64_t bytes;
    const char* name;
  } items[] = {{&c.q, cells * dim * 8, " q"},         {&c.k, kv, " k"},
               {&c.v, kv, " v"},                      {&c.q_norm2, cells * 4, " q_norm2"},
               {&c.k_norm2, cells * 4, " k_norm2"},   {&c.row_max, cells * 4, " row_max"},
               {&c.row_sum, cells * 4, " row_sum"},   {&c.row_energy, cells * 4, " row_energy"},
               {&c.span, 16, " span"},                {&c.lag_table, (uint64_t)heads * capacity * 16, " lag table"},
               {&c.partials, partial_floats * 4, " split-k partials"}};
  for (auto& it : items) {
    auto b = ctx.allocator().allocate(it.bytes, gpu::MemoryKind::device, base + it.name);
    if (!b) return b.status();
    *it.buf = b.take();
  }
  if (phase_ring) {
    auto b = ctx.allocator().allocate(cells * dim * 8, gpu::MemoryKind::device, base + " phase ring");
    if (!b) return b.status();
    c.theta = b.take();
  }
  return c;
}

KernelSwitches kernel_switches(const KernelOptions& o) {
  KernelSwitches s;
  auto flag = [](int v, bool def) { return v < 0 ? def : v == 1; };
  s.fma = flag(o.attention_fma, s.fma);
  s.q_registers = flag(o.attention_q_registers, s.q_registers);
  s.pad = flag(o.attention_pad_strides, s.pad);
  s.pad_auto = o.attention_pad_strides < 0;
  s.prefetch = flag(o.attention_prefetch, s.prefetch);
  s.raw_f16 = flag(o.attention_raw_f16, s.raw_f16);
  s.lag_e2 = flag(o.attention_lag_e2, s.lag_e2);
  if (o.attention_f16_chunk > 0) s.f16_chunk = (uint32_t)o.attention_f16_chunk;
  return s;
}

uint32_t tile_shared_bytes(uint32_t rows, uint32_t keys, uint32_t dim, bool f16, bool gate, bool coopmat,
                           bool subgroup_reduce, bool kv_apart, uint32_t block, bool pad, bool per_element) {
  // tqn, tqt, tqi; tkn, tkt, tki; tlag: the tile's window of lag-table rows (rows + keys entries)
  const uint32_t common = rows * (4 + 8 + 4) + keys * (4 + 8 + 4) + (rows + keys) * 16;
  if (coopmat && per_element) {  // halves for Q and K (and V apart); floats for the output hand-over only
    const uint32_t d2 = (2 * dim + block - 1) / block * block;
    return (rows + (kv_apart ? 2 : 1) * keys) * (d2 + 8) * 2  // tq, tkv (K, V)
           + rows * (d2 + 4) * 4                             // tmat
           + common;
  }
  if (coopmat) {  // halves for Q, K/V and the weights; floats for the cross terms, then P V (attention_tile.glsl)
    (void)gate;  // the gate's energies stay in registers
    const uint32_t d2 = (2 * dim + block - 1) / block * block;  // 2D halves zero-padded to whole blocks
    return (rows + keys) * (d2 + 8) * 2                    // tq, tkv
           + rows * std::max(keys + (pad ? 8 : 4), d2 + 4) * 4  // tmat: cross terms, then P V
           + rows * (keys + 8) * 2                         // tp16: p E
           + common;
  }
  const uint32_t elt = f16 ? 4 : 8;  // one complex component of the Q, K and V tiles
  return (rows + (kv_apart ? 2 : 1) * keys) * (dim + 1) * elt          // tq, tkv (K, V)
         + rows * (keys + (pad ? 8 : 1)) * 4                             // tp: p E per pair
         + (subgroup_reduce ? 4 : rows * tile_threads_per_group(dim) * 4)  // tmx: S maxima a row
         + common;
}

namespace {
// The kernel check's refusals on this device, for the chooser's line.
std::string refusal_note(const gpu::Capabilities& caps) {
  return caps.kernel_refusals.empty() ? std::string()
                                      : ", " + std::to_string(caps.kernel_refusals.size()) +
                                            " path(s) refused by the kernel check";
}
// Subgroup shuffles in compute (the *_sx kernels' butterflies, the cooperative-matrix tile's rows).
bool subgroup_shuffles(const gpu::Capabilities& caps) {
  const VkSubgroupFeatureFlags shuffle = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  return (caps.subgroup_ops & shuffle) == shuffle;
}
}  // namespace

int row_subgroup_reduce(const gpu::Capabilities& caps, uint32_t wg, uint32_t s) {
  s = std::max<uint32_t>(s, 1);
  // The row group's S lanes in one subgroup: full subgroups of a required size of at least S.
  const uint32_t lanes = gpu::subgroup_layout_size(caps, wg);
  if ((s & (s - 1)) != 0 || lanes < s) return 0;
  const VkSubgroupFeatureFlags clustered =
      VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_CLUSTERED_BIT;
  if ((caps.subgroup_ops & clustered) == clustered) return 1;
  if (subgroup_shuffles(caps)) return 2;
  return 0;
}

uint32_t merge_chunk_for(uint32_t dim) {
  uint32_t dc = std::clamp<uint32_t>(dim, 1, 8);
  while (dim % dc != 0) --dc;
  return dc;
}

uint32_t tile_threads_per_group(uint32_t dim) {
  uint32_t s = 8;
  while (s > 1 && dim % s != 0) s /= 2;
  return s;
}

namespace {
// The cooperative tile for prefill-sized calls (see common/attention_tile.glsl): 128 threads in
// groups of S sharing keys and dims (S = 8, or the largest power of two dividing D: 4 at D = 12 or
// 20; 64 threads when S = 1 so that a row group is at most the tile's 64 rows), 64 query rows and
// 32 keys a tile (64 with cooperative matrices), halved (keys first, then rows) until the tile
// fits the device's shared memory.
// Large D (a key row is D complex values): once the rows reach their minimum, keys go on halving
// down to S (TC = BK / S >= 1): at D = 128 a scalar 16 x 16 tile needs 35 KiB, more than 32 KiB
// devices have, and 16 rows x 8 keys fit in 27 KiB. Returns false when it cannot fit at all.
// Cooperative matrices need whole 16 x 16 blocks (2D is zero-padded to a multiple of 16 halves),
// subgroups that tile the workgroup, and subgroup shuffles for the row statistics.
bool choose_tile(const gpu::Capabilities& caps, uint32_t dim, bool f16, bool gate, uint32_t block, uint32_t wg_forced,
                 AttentionTiling& t) {
  const bool coopmat = block != 0;
  if (t.v3.pad_auto) t.v3.pad = true;  // (an earlier attempt may have left it off)
  const uint32_t s = tile_threads_per_group(dim);
  uint32_t wg = std::min<uint32_t>(caps.max_workgroup_invocations >= 128 ? 128 : 64, 64 * s);
  // KernelOptions::attention_tile_workgroup: another workgroup, whole row groups (the matrices in
  // NVIDIA's shape on a device of narrower subgroups: 4 subgroups owning several blocks each).
  if (wg_forced != 0) {
    if (wg_forced % s != 0 || wg_forced > caps.max_workgroup_invocations || wg_forced / s > 64) return false;
    wg = wg_forced;
  }
  const uint32_t nr = wg / s;
  const uint32_t lanes = gpu::subgroup_layout_size(caps, wg);  // full subgroups of a required size
  // (the emulated matrices: block^2 elements over at most block^2 / 4 per lane)
  if (coopmat && lanes < 4) return false;
  const uint32_t min_bk = coopmat ? block : std::max<uint32_t>(s, 4);
  int reduce = row_subgroup_reduce(caps, wg, s);
  // The cooperative-matrix kernels take the row statistics by shuffles (RFA_ROW_SG=2) only.
  if (coopmat) {
    if (reduce == 0 || !subgroup_shuffles(caps)) return false;
    reduce = 2;
  }
  const bool sg = reduce != 0;
  // The largest tile that fits, K and V in two buffers or (the scalar tile) in one.
  auto fit = [&](bool apart, uint32_t& bq, uint32_t& bk) {
    bq = 64;
    bk = coopmat ? 64 : 32;  // the matrices: 64 x 64 at D = 32 in 48 KiB (NVIDIA's), fewer barriers a key
    while (tile_shared_bytes(bq, bk, dim, f16, gate, coopmat, sg, apart, block ? block : 16, t.v3.pad) >
           caps.max_shared_memory) {
      if (bk > 16 && bk > min_bk) bk /= 2;
      else if (bq > std::max<uint32_t>(nr, 16)) bq /= 2;
      else if (bk > min_bk) bk /= 2;  // large D: fewer keys a tile rather than no tile
      else return false;
    }
    return true;
  };
  uint32_t bq = 0, bk = 0, bq1 = 0, bk1 = 0;
  bool two = fit(true, bq, bk);
  // Padded rows (v3) only where they cost no keys or rows: at D = 32 the matrices' 64 x 64 tile
  // fills NVIDIA's 48 KiB exactly, and 4 more floats a cross-term row would halve its keys.
  if (t.v3.pad && t.v3.pad_auto) {
    t.v3.pad = false;
    uint32_t uq = 0, uk = 0;
    const bool unpadded = fit(true, uq, uk);
    t.v3.pad = !(unpadded && (!two || uq * uk > bq * bk));
    if (!t.v3.pad) {
      two = unpadded;
      bq = uq;
      bk = uk;
    }
  }
  // The matrices' subgroups each keep one block row's Q fragments: a whole number of subgroups
  // per row block (fewer rows where the subgroups are few: 4 subgroups of 8-row blocks, 32 rows),
  // and at least as many rows as row threads.
  if (coopmat && two)
    while (bq > block && bq / 2 >= nr && (wg / lanes) % (bq / block) != 0) bq /= 2;
  if (coopmat && two && ((wg / lanes) % (bq / block) != 0 || bq % block != 0)) return false;
  // One buffer (a barrier more a tile) only where it gives a larger tile or two do not fit.
  const bool one = !coopmat && fit(false, bq1, bk1) && (!two || bq1 * bk1 > bq * bk);
  if (!two && !one) return false;
  if (one) {
    bq = bq1;
    bk = bk1;
  }
  t.workgroup = wg;
  t.threads_per_row = s;
  t.rows_per_group = bq;
  t.keys_per_tile = bk;
  t.subgroup_reduce = sg;
  t.subgroup_shuffle = reduce == 2;
  t.kv_apart = !one;
  t.coopmat_block = block;
  t.shared_bytes = tile_shared_bytes(bq, bk, dim, f16, gate, coopmat, sg, !one, block ? block : 16, t.v3.pad);
  return true;
}

// The per-element matrix tile (common/attention_tile_walk_pe.glsl): one subgroup per row block of
// `block` rows, owning its rows' softmax state and output on the matrices, so the workgroup is
// exactly BQ / block full subgroups of the device's required size L (4 x 32 = 128 threads for 64
// rows of 16 on NVIDIA; 8 x 8 = 64 for 64 rows of 8 on lavapipe), at least one thread per row for
// the hand-over (L >= block). 64 rows x 64 keys, K and V in two tiles where they fit (two barriers
// a key tile), else V over K (four); keys, then rows, halved until the tile fits.
bool choose_tile_pe(const gpu::Capabilities& caps, uint32_t dim, uint32_t block, uint32_t wg_forced, AttentionTiling& t) {
  const uint32_t lanes = gpu::required_subgroup_size(caps);
  if (block == 0 || lanes < block || !subgroup_shuffles(caps)) return false;
  auto fit = [&](bool apart, uint32_t& bq, uint32_t& bk) {
    bq = 64;
    bk = 64;
    while (tile_shared_bytes(bq, bk, dim, false, false, true, true, apart, block, true, true) > caps.max_shared_memory) {
      if (bk > 32 && bk > block) bk /= 2;
      else if (bq > block) bq /= 2;
      else if (bk > block) bk /= 2;
      else return false;
    }
    return true;
  };
  uint32_t bq = 0, bk = 0;
  bool apart = fit(true, bq, bk);
  uint32_t bq1 = 0, bk1 = 0;
  // V over K only where K and V apart cost half the keys or more (two barriers more a tile).
  if (fit(false, bq1, bk1) && (!apart || bq1 * bk1 >= 2 * bq * bk)) {
    apart = false;
    bq = bq1;
    bk = bk1;
  } else if (!apart) {
    return false;
  }
  uint32_t wg = bq / block * lanes;
  // A forced workgroup (KernelOptions::attention_tile_workgroup) sets the rows: wg / lanes blocks.
  if (wg_forced != 0) {
    if (wg_forced % lanes != 0 || wg_forced / lanes * block > bq) return false;
    wg = wg_forced;
    bq = wg / lanes * block;
  }
  if (wg > caps.max_workgroup_invocations || gpu::subgroup_layout_size(caps, wg) != lanes) return false;
  const uint32_t s = tile_threads_per_group(dim);
  if (wg % s != 0 || bq < wg / s) return false;  // the tile's S and NR constants stay whole (unused by the walk)
  t.workgroup = wg;
  t.threads_per_row = s;
  t.rows_per_group = bq;
  t.keys_per_tile = bk;
  t.subgroup_reduce = true;
  t.subgroup_shuffle = true;
  t.kv_apart = apart;
  t.coopmat_block = block;
  t.shared_bytes = tile_shared_bytes(bq, bk, dim, false, false, true, true, apart, block, true, true);
  return true;
}
}  // namespace

AttentionTiling choose_attention_tiling(const gpu::Capabilities& caps, const KernelOptions& overrides, uint32_t n_new,
                                       uint32_t dim, uint32_t batch_heads, uint32_t capacity, bool gate) {
  AttentionTiling t;
  t.v3 = kernel_switches(overrides);
  // On CPU devices (lavapipe) a workgroup barrier switches every invocation; for decode, where the
  // threads of one row merge their states through several barriers, one SIMD-wide workgroup is
  // faster (measured: 20 -> 8 ms per paper-size decode step at context 512). Prefill keeps 64.
  uint32_t wg_cap = 64;
  const bool cpu = caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  // GPU decode steps (KernelOptions::attention_decode_registers): K/V straight from the cache into
  // registers, no barrier in the walk, four subgroups of a row's threads in flight.
  const bool decode_registers = !cpu && n_new <= kSplitRows && overrides.attention_decode_registers != 0;
  if (decode_registers) wg_cap = 128;
  if (caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU && n_new <= 8) {
    wg_cap = std::max<uint32_t>(caps.subgroup_size, 4);
    // ... unless the keys per thread would pass kCpuKeysPerThread (below): then more threads.
    while (wg_cap < 64 && capacity / wg_cap > kCpuKeysPerThread) wg_cap *= 2;
  }
  uint32_t max_wg = std::max<uint32_t>(1, std::min<uint32_t>(wg_cap, caps.max_workgroup_invocations));
  // KernelOptions::attention_direct_kv overrides the device's choice (tests cover both paths on any device).
  const bool direct_kv = caps.refuse_staged_keys ||
                         (overrides.attention_direct_kv < 0 ? cpu || decode_registers : overrides.attention_direct_kv == 1);
  // The layout for a workgroup of at most max_wg threads; halved while the shared memory it needs
  // (at least 4 keys a tile, the merge scratch of its threads) does not fit the device's (16 KiB
  // on the Vulkan minimum: at D = 80 a 64-thread decode workgroup's merge scratch alone is 18 KiB).
  for (;;) {
    // Few query rows (decode) leave most of a 64-row workgroup idle: split each row's keys instead.
    if (n_new <= 2) {
      t.rows_per_group = 1;
    } else if (n_new <= 8) {
      t.rows_per_group = 4;
    } else if (n_new <= 64) {
      t.rows_per_group = 16;
    } else {
      t.rows_per_group = 64;
    }
    t.rows_per_group = std::min(t.rows_per_group, max_wg);
    if (caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU && capacity > kCpuKeysPerThread) {
      // Enough threads per row that none walks more than kCpuKeysPerThread keys (a power of two).
      uint32_t s = 1;
      while (s < max_wg && (capacity + s - 1) / s > kCpuKeysPerThread) s *= 2;
      t.rows_per_group = std::min(t.rows_per_group, std::max<uint32_t>(1, max_wg / s));
    }
    t.threads_per_row = max_wg / t.rows_per_group;
    t.workgroup = t.rows_per_group * t.threads_per_row;
    t.merge_chunk = merge_chunk_for(dim);
    // The merge of a row's S states by subgroup operations where the device has them (*_sg, *_sx:
    // no shared memory, no barrier), else through the shared scratch below.
    const int reduce = t.threads_per_row > 1 ? row_subgroup_reduce(caps, t.workgroup, t.threads_per_row) : 0;
    t.subgroup_reduce = reduce != 0;
    t.subgroup_shuffle = reduce == 2;
    const bool shared_merge = t.threads_per_row > 1 && !t.subgroup_reduce;
    const uint32_t red = shared_merge ? t.workgroup * t.merge_chunk : 1;
    const uint32_t fin = shared_merge ? t.rows_per_group * dim : 1;
    // Shared memory: key and value tiles (BK rows of D complex each, padded to an odd stride of
    // D | 1 so that the row's threads reading keys jj, jj + 1, ... hit different banks), |K|^2 and
    // (hi, lo) times per key, the merge scratch and three floats per thread. Capped at 32 KiB so
    // two workgroups fit where 64 do.
    const int64_t budget = (int64_t)std::min<uint32_t>(caps.max_shared_memory, 32768) - (int64_t)(red + fin) * 8 -
                           (int64_t)(t.subgroup_reduce ? 0 : t.workgroup * 12) - 256;
    int64_t bk = budget / (int64_t)((dim | 1u) * 16 + 12);
    if (bk < 4 && max_wg > 1) {
      max_wg /= 2;
      continue;
    }
    bk = std::clamp<int64_t>(bk, 4, 64);
    // Key tiles in whole rounds of the row's threads (thread s takes keys s, s + S, ...): with S = 64
    // and 52 keys a tile, 12 of 64 lanes idled. Where a round of S keys does not fit, fewer threads
    // per row, down to one subgroup, whose round does (tiles staged in shared memory only).
    const uint32_t sg = std::max<uint32_t>(caps.subgroup_size, 4);
    if (!direct_kv && t.threads_per_row > 1 && bk < t.threads_per_row && bk >= sg && t.rows_per_group == 1 &&
        max_wg > sg) {
      uint32_t s = sg;
      while (s * 2 <= bk) s *= 2;
      max_wg = s;
      continue;
    }
    const uint32_t round = !direct_kv && t.threads_per_row > 1 && bk >= t.threads_per_row ? t.threads_per_row : 4;
    t.keys_per_tile = (uint32_t)(bk / round * round);
    break;
  }
  t.groups_x = (n_new + t.rows_per_group - 1) / t.rows_per_group;
  t.direct_kv = direct_kv;
  // The lag table trades a few transcendentals per pair for one 16-byte read: a win everywhere
  // measured (lavapipe included), so on unless turned off.
  t.lag_table = overrides.attention_lag_table != 0;
  // Split-k: a decode step has B x H x ceil(n_new / BQ) workgroups, far too few for a GPU with a
  // hundred compute units at long context. Split the keys until about kSplitWorkgroups run, with
  // at least kMinSplitKeys keys per split (counted from the capacity: dispatch sizes must not
  // depend on the stream's length, so that a recorded step replays). CPU devices have a few
  // threads that B x H workgroups already fill: no split there unless forced.
  const uint32_t groups = t.groups_x * std::max<uint32_t>(1, batch_heads);
  const uint32_t max_splits =
      batch_heads == 0 ? 1 : std::max<uint32_t>(1, std::min<uint32_t>(kMaxSplits, kSplitWorkgroups / batch_heads));
  uint32_t splits = 1;
  std::string split_why;
  if (n_new > kSplitRows || batch_heads == 0) {
    split_why = "";
  } else if (caps.refuse_split_k) {
    split_why = "";
  } else if (overrides.attention_split_k >= 0) {
    splits = std::max<uint32_t>(1, (uint32_t)overrides.attention_split_k);
    split_why = ", split-k forced";
  } else if (!cpu && capacity >= 2 * kMinSplitKeys) {
    // Two workgroups per compute unit (KernelOptions::attention_split_cores; the device's count, else
    // a class default: 64 discrete, 8 integrated), else kSplitWorkgroups.
    const uint32_t units = caps.compute_units ? caps.compute_units
                           : caps.device_type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 64 : 8;
    const uint32_t target = overrides.attention_split_cores != 0 ? 2 * units : kSplitWorkgroups;
    splits = std::min(target / std::max<uint32_t>(1, groups), capacity / kMinSplitKeys);
    split_why = overrides.attention_split_cores != 0
                    ? ", split-k: two workgroups per compute unit (" + std::to_string(units) +
                          (caps.compute_units ? " units)" : " units, a class default)")
                    : std::string(", split-k: too few workgroups for the keys");
  }
  t.splits = std::max<uint32_t>(1, std::min(splits, max_splits));
  // The cooperative tile: the GPU path for calls of more than kTileMinRows rows (decode steps keep
  // threads per row and split-k), forced on or off by KernelOptions::attention_tile for any call.
  // CPU devices keep the path above (1.05x SDPA on lavapipe); forced there, it needs a bounded
  // walk (lavapipe's loop cap, see kCpuKeysPerThread): at most kCpuTileKeys keys.
  std::string tile_why;
  const bool want_tile = overrides.attention_tile < 0 ? (!cpu && n_new > kTileMinRows) : overrides.attention_tile == 1;
  if (want_tile && caps.refuse_tile) {
    tile_why = ", tile refused by the kernel check";
  } else if (want_tile && cpu && capacity > kCpuTileKeys) {
    tile_why = ", tile refused: more than " + std::to_string(kCpuTileKeys) + " keys on a CPU device";
  } else if (want_tile) {
    const bool f16_wanted = overrides.attention_f16_math == 1;
    const bool f16 = f16_wanted && caps.shader_float16 && !caps.refuse_f16_math;
    // Cooperative matrices: off unless asked for (not yet run on a GPU that has them): the KHR
    // extension's where the device has it and this build has its kernels (glslang 15), else NV's;
    // 2: the NV layout emulated by subgroup lanes (tests it on any device).
    const bool cm_wanted = overrides.attention_coopmat >= 1;
    const bool cm_emulated = overrides.attention_coopmat == 2;
    const bool khr = !cm_emulated && caps.coopmat_khr() && gpu::find_shader("rfa_attention_tile_ck") != nullptr;
    const bool cm_device = cm_emulated ? caps.shader_float16 && (caps.subgroup_ops & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                                             caps.subgroup_size >= 4
                                       : khr || caps.coopmat_nv;
    const uint32_t block = khr ? caps.coopmat_khr_block : 16;
    const uint32_t wg_forced = overrides.attention_tile_workgroup > 0 ? (uint32_t)overrides.attention_tile_workgroup : 0;
    AttentionTiling tt = t;
    // The per-element form where the device has VK_NV_cooperative_matrix2 (and this build its kernels).
    const bool pe = cm_wanted && khr && caps.coopmat_nv2 && overrides.attention_coopmat_per_element != 0 &&
                    gpu::find_shader("rfa_attention_tile_pe") != nullptr;
    tt.coopmat_pe = pe && choose_tile_pe(caps, dim, block, wg_forced, tt);
    tt.coopmat = tt.coopmat_pe || (cm_wanted && cm_device && choose_tile(caps, dim, f16, gate, block, wg_forced, tt));
    tt.coopmat_emulated = tt.coopmat && cm_emulated;
    tt.coopmat_khr = tt.coopmat && khr;
    if (tt.coopmat || choose_tile(caps, dim, f16, gate, 0, wg_forced, tt)) {
      tt.tile = true;
      tt.f16_math = f16 && !tt.coopmat;
      tt.direct_kv = false;
      tt.splits = 1;
      tt.groups_x = (n_new + tt.rows_per_group - 1) / tt.rows_per_group;
      tt.why = std::string(cpu ? "CPU device: " : "GPU: ") + "cooperative tile " + std::to_string(tt.rows_per_group) +
               " rows x " + std::to_string(tt.keys_per_tile) + " keys, " + std::to_string(tt.workgroup) +
               " threads in groups of " + std::to_string(tt.threads_per_row) + " (" +
               std::to_string(tt.shared_bytes) + " B shared)" +
               (overrides.attention_tile == 1 ? ", forced" : ", prefill-sized call") +
               (tt.coopmat ? (cm_emulated ? ", cooperative matrices emulated by subgroup lanes (test mode)"
                              : khr ? ", cooperative matrices (VK_KHR_cooperative_matrix " + std::to_string(block) + "x" +
                                          std::to_string(block) + "x" + std::to_string(block) + ", fp16 in, fp32 sums)" +
                                          (tt.coopmat_pe ? ", pair terms and softmax per element (VK_NV_cooperative_matrix2)"
                                           : pe ? ", pair terms through shared memory (no per-element tile fits this shape)"
                                                : "")
                                    : ", cooperative matrices (VK_NV_cooperative_matrix 16x16x16, fp16 in, fp32 sums)")
                : cm_wanted ? (cm_device ? (subgroup_shuffles(caps)
                                                ? ", scalar (no cooperative-matrix tile fits this shape)"
                                                : ", scalar (the cooperative-matrix tile needs subgroup shuffles)")
                               : cm_emulated ? ", scalar (emulated matrices need shaderFloat16 and subgroups)"
                                             : ", scalar (the device has neither VK_KHR_cooperative_matrix's fp16 8x8x8 "
                                               "or 16x16x16 nor VK_NV_cooperative_matrix 16x16x16 fp16)")
                            : "") +
               (tt.f16_math ? ", fp16 products" : (f16_wanted && !tt.coopmat ? ", fp32 (fp16 products need shaderFloat16)" : "")) +
               (tt.coopmat_pe             ? ", row max/sum by matrix reductions"
                : tt.coopmat                ? ", row max/sum by subgroup shuffles"
                : tt.subgroup_shuffle         ? ", row max/sum by subgroup shuffles (no clustered subgroup operations)"
                : tt.subgroup_reduce          ? ", row max/sum by clustered subgroup reductions"
                                              : ", row max/sum through shared memory (no subgroup clustered operations or "
                                                "shuffles, or no whole subgroups of a row group's lanes)") +
               ((tt.coopmat && !tt.coopmat_pe) || tt.kv_apart ? "" : ", V staged over K (two tiles do not fit)") +
               (tt.lag_table ? ", integer lags from the table" : ", every pair's terms computed") +
               refusal_note(caps);
      return tt;
    }
    const uint32_t s_min = tile_threads_per_group(dim);  // the smallest tile choose_tile tries
    const uint32_t nr_min = std::min<uint32_t>(caps.max_workgroup_invocations >= 128 ? 128 : 64, 64 * s_min) / s_min;
    tile_why = ", tile refused: " +
               std::to_string(tile_shared_bytes(std::max<uint32_t>(nr_min, 16), std::max<uint32_t>(s_min, 4), dim, f16,
                                                gate, false)) +
               " B of shared memory needed at least, the device has " + std::to_string(caps.max_shared_memory);
  }
  t.groups_x *= t.splits;
  t.why = std::string(cpu ? "CPU device: " : "GPU: ") + (t.direct_kv ? "keys read from the cache" : "key tiles in shared memory") +
          (t.threads_per_row > 1
               ? ", " + std::to_string(t.threads_per_row) + " threads per row (few rows), merged by " +
                     (t.subgroup_shuffle  ? "subgroup shuffles (no clustered subgroup operations)"
                      : t.subgroup_reduce ? "clustered subgroup reductions"
                                          : "shared memory (no subgroup clustered operations or shuffles, or no "
                                            "whole subgroups of a row's lanes)")
               : "") +
          (t.lag_table ? ", integer lags from the table" : ", every pair's terms computed") +
          (t.splits > 1 ? std::string(split_why) + " (" + std::to_string(t.splits) + " splits)" : "") + tile_why +
          refusal_note(caps);
  return t;
}

Result<const gpu::Buffer*> prepare_span(gpu::Recorder& rec, AttentionCache& cache, const AttentionSpan& span,
                                        bool causal) {
  if (span.positions) return span.positions;
  const uint64_t end = (uint64_t)span.pos0 + span.n_new;
  if (end > 0xffffffffull)
    return make_error(Code::invalid_argument, "rfa attention: positions past 2^32 - 1");
  if (cache.window > 0 && !causal)
    return make_error(Code::invalid_argument, "rfa attention: a window needs a causal layer");
  // The keys this call's queries read, [first, end), must all still be in the ring.
  const uint64_t first = cache.window > 0 && span.pos0 + 1 > cache.window ? span.pos0 + 1 - cache.window : 0;
  if (end - first > cache.capacity)
    return make_error(Code::invalid_argument, "rfa attention: positions [" + std::to_string(span.pos0) + ", " +
                                                  std::to_string(end) + ") need keys [" + std::to_string(first) +
                                                  ", " + std::to_string(end) + "), more than the cache's " +
                                                  std::to_string(cache.capacity) + " slots");
  const uint32_t pair[4] = {span.pos0, (uint32_t)end, 0, 0};
  rec.update(cache.span, pair, sizeof(pair));
  cache.filled = std::max(cache.filled, (uint32_t)end);
  return &cache.span;
}

namespace {
bool accumulated(const AttentionParams& p) { return p.phase != PhaseSource::omega_t; }

// An accumulated phase needs the cache's phase ring.
Status check_phase(const AttentionParams& p, const AttentionCache& cache) {
  if (p.phase != PhaseSource::omega_t && p.phase != PhaseSource::accumulated_rope &&
      p.phase != PhaseSource::accumulated_random && p.phase != PhaseSource::accumulated_learned)
    return make_error(Code::invalid_argument, "rfa attention: unknown phase source " + std::to_string((uint32_t)p.phase));
  if (accumulated(p) && !cache.theta.valid())
    return make_error(Code::invalid_argument,
                      "rfa attention: the layer's accumulated phase needs a cache created with a phase ring");
  return Status::Ok();
}
}  // namespace

Status record_rfa_phase_scan(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w,
                             AttentionCache& cache, const AttentionSpan& span) {
  const AttentionParams& p = w.params();
  RFA_TRY(check_phase(p, cache));
  if (!accumulated(p) || span.n_new == 0) return Status::Ok();
  auto positions = prepare_span(rec, cache, span, p.sw.causal);
  if (!positions) return positions.status();
  gpu::SpecConstants spec;  // constant_id 0: D
  spec.u32(cache.dim);
  const bool learned = p.phase == PhaseSource::accumulated_learned;
  if (learned) {
    if (!span.token_ids)
      return make_error(Code::invalid_argument, "rfa attention: the layer's learned accumulated steps need the call's "
                                                "token ids (AttentionSpan::token_ids)");
    RFA_TRY(check_size(*span.token_ids, (uint64_t)cache.batch * span.n_new * 4, "token_ids"));
    if (p.step_vocab < 1 || p.step_table.size() != (size_t)p.step_vocab * cache.dim)
      return make_error(Code::invalid_argument, "rfa attention: params.step_table must hold step_vocab * dim angles");
  }
  auto pipe = ctx.pipelines().get<PhaseScanPush>("rfa_phase_scan", spec);
  if (!pipe) return pipe.status();
  const uint64_t threads = (uint64_t)cache.batch * cache.heads * cache.dim;
  for (uint32_t first = 0; first < span.n_new; first += kPhaseScanChunk) {
    const PhaseScanPush push{cache.batch, span.n_new, cache.capacity, cache.heads, first, kPhaseScanChunk,
                             (uint32_t)p.phase, p.step_seed, p.step_layer, (uint32_t)p.step_vocab};
    // Layers without learned steps bind the omega buffer in the ids' and table's places (never read).
    rec.dispatch(*pipe,
                 {gpu::in(w.omega()), gpu::inout(cache.theta), gpu::in(**positions),
                  gpu::in(learned ? *span.token_ids : w.omega()), gpu::in(learned ? w.step_table() : w.omega())},
                 push, gpu::workgroups(threads, 64), 1, 1, "rfa_phase_scan");
  }
  return Status::Ok();
}

Status record_rfa_rotate(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                         const gpu::Buffer& timestamps, const gpu::Buffer& q_proj, const gpu::Buffer& k_proj,
                         const gpu::Buffer& v_proj, gpu::Buffer& v_norm_scratch, const AttentionSpan& span) {
  const AttentionParams& p = w.params();
  const uint32_t H = (uint32_t)p.heads, D = (uint32_t)p.dim, B = cache.batch, n_new = span.n_new;
  if (cache.heads != H || cache.dim != D)
    return make_error(Code::invalid_argument, "rfa attention: cache heads/dim differ from the layer's");
  if (n_new == 0) return Status::Ok();
  auto positions = prepare_span(rec, cache, span, p.sw.causal);
  if (!positions) return positions.status();
  const uint64_t proj = (uint64_t)B * n_new * 2 * H * D * 4;
  RFA_TRY(check_size(q_proj, proj, "q_proj"));
  RFA_TRY(check_size(k_proj, proj, "k_proj"));
  RFA_TRY(check_size(v_proj, proj, "v_proj"));
  RFA_TRY(check_size(v_norm_scratch, proj, "v_norm"));
  RFA_TRY(check_size(timestamps, (uint64_t)B * cache.capacity * 8, "timestamps"));
  RFA_TRY(check_phase(p, cache));
  if (accumulated(p))
    RFA_TRY(record_rfa_phase_scan(ctx, rec, w, cache, AttentionSpan{span.pos0, n_new, *positions, span.token_ids}));
  gpu::SpecConstants spec;
  // The mechanism's UNIT mode: unit directions and log-magnitudes (RT-RFA, docs/variant-rt.md §3.1).
  const mech::Mechanism& m = mech::mechanism_of(p);
  spec.set(kRotD, D).set_flag(kRotInNorm, p.sw.complex_input_norm).set(kRotPhase, (uint32_t)p.phase)
      .set_flag(kRotRotateV, p.sw.stationary_values).set_flag(kRotUnit, m.unit_directions())
      .set_f32(kRotMagEps, m.magnitude_eps(p));
  auto pipe = ctx.pipelines().get<RotatePush>(cache.kv_f16 ? "rfa_rotate_kv16" : "rfa_rotate", spec);
  if (!pipe) return pipe.status();
  const RotatePush push{B, n_new, cache.capacity, H};
  const uint64_t threads = (uint64_t)B * n_new * H * 3;
  // Layers without a phase ring bind the span there (never read: PHASE = 0).
  rec.dispatch(*pipe,
               {gpu::in(w.omega()), gpu::in(w.gains()), gpu::in(timestamps), gpu::in(q_proj), gpu::in(k_proj),
                gpu::in(v_proj), gpu::out(cache.q), gpu::out(cache.k), gpu::out(cache.v), gpu::out(cache.q_norm2),
                gpu::out(cache.k_norm2), gpu::out(v_norm_scratch), gpu::in(**positions),
                gpu::in(accumulated(p) ? cache.theta : **positions)},
               push, gpu::workgroups(threads, 64), 1, 1, "rfa_rotate");
  return Status::Ok();
}

Status record_rfa_lag_table(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache) {
  const AttentionParams& p = w.params();
  if (cache.heads != (uint32_t)p.heads)
    return make_error(Code::invalid_argument, "rfa lag table: cache heads differ from the layer's");
  // Mechanisms without a lag table form every pair's terms (table_lags stays 0).
  if (!mech::mechanism_of(p).uses_lag_table()) return Status::Ok();
  gpu::SpecConstants spec;
  spec.set(kLagCov, (uint32_t)p.sw.covariance).set(kLagBias, (uint32_t)p.sw.additive_bias)
      .set(kLagPrec, (uint32_t)p.sw.precision);
  auto pipe = ctx.pipelines().get<CurvesPush>("rfa_lag_table", spec);
  if (!pipe) return pipe.status();
  const CurvesPush push{cache.capacity, cache.heads};  // the same (n_lags, heads) as rfa_curves
  const uint64_t n = (uint64_t)cache.capacity * cache.heads;
  rec.dispatch(*pipe, {gpu::in(w.table()), gpu::out(cache.lag_table)}, push, gpu::workgroups(n, 64), 1, 1,
               "rfa_lag_table");
  cache.table_lags = cache.capacity;
  return Status::Ok();
}

std::string attention_kernel_name(const char* family, const AttentionTiling& t, bool kv_f16) {
  std::string n = family;
  if (t.tile)
    n += t.coopmat ? (t.coopmat_emulated ? "_tile_cm_emu" : t.coopmat_pe ? "_tile_pe" : t.coopmat_khr ? "_tile_ck" : "_tile_cm")
                   : t.f16_math ? "_tile_f16" : "_tile";
  if (!t.coopmat && t.subgroup_reduce) n += t.subgroup_shuffle ? "_sx" : "_sg";
  return kv_f16 ? n + "_kv16" : n;
}

Status record_rfa_fused(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                        const gpu::Buffer& timestamps, const gpu::Buffer& v_norm_scratch, gpu::Buffer& out,
                        const AttentionSpan& span) {
  const AttentionParams& p = w.params();
  const uint32_t H = (uint32_t)p.heads, D = (uint32_t)p.dim, B = cache.batch, n_new = span.n_new;
  if (n_new == 0) return Status::Ok();
  auto positions = prepare_span(rec, cache, span, p.sw.causal);
  if (!positions) return positions.status();
  RFA_TRY(check_size(out, (uint64_t)B * n_new * 2 * H * D * 4, "out"));
  RFA_TRY(check_phase(p, cache));
  return mech::mechanism_of(p).record_fused(ctx, rec, w, cache, timestamps, v_norm_scratch, out,
                                            AttentionSpan{span.pos0, n_new, *positions, span.token_ids});
}

Status record_rfa_kernel(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                         const gpu::Buffer& timestamps, const gpu::Buffer& v_norm_scratch, gpu::Buffer& out,
                         const AttentionSpan& span) {
  const AttentionParams& p = w.params();
  const AttentionTiling t = choose_attention_tiling(ctx.caps(), ctx.kernels(), span.n_new, (uint32_t)p.dim,
                                                    cache.batch * (uint32_t)p.heads, cache.capacity, p.sw.gate);
  return record_rfa_kernel(ctx, rec, w, cache, timestamps, v_norm_scratch, out, span, t);
}

Status record_rfa_kernel(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                         const gpu::Buffer& timestamps, const gpu::Buffer& v_norm_scratch, gpu::Buffer& out,
                         const AttentionSpan& span, const AttentionTiling& t, const RecordTestHooks& hooks) {
  const AttentionParams& p = w.params();
  const uint32_t H = (uint32_t)p.heads, D = (uint32_t)p.dim, B = cache.batch, n_new = span.n_new;
  if (n_new == 0) return Status::Ok();
  if (!span.positions) return make_error(Code::invalid_argument, "rfa attention: the span needs its positions buffer");
  const AttentionSwitches& sw = p.sw;
  // Values that were never rotated are not rotated back; an accumulated phase has no lag-shift
  // rotation (e^{i omega s} belongs to the omega t clock).
  const bool counter_rotate = sw.counter_rotate && sw.stationary_values;
  const bool shift_rotation = sw.shift_rotation && !accumulated(p);
  // The layer's switches (shared by the kernel and its reduce), then the tiling's shape.
  auto switches = [&](gpu::SpecConstants& spec) {
    spec.set_flag(kAttnCausal, sw.causal != hooks.flip_causal).set(kAttnCov, (uint32_t)sw.covariance).set(kAttnBias, (uint32_t)sw.additive_bias)
        .set(kAttnPrec, (uint32_t)sw.precision).set_flag(kAttnRobust, sw.robust).set_flag(kAttnFullResid, sw.full_residual)
        .set_flag(kAttnCounterRot, counter_rotate).set_flag(kAttnShiftRot, shift_rotation).set_flag(kAttnGate, sw.gate)
        .set_flag(kAttnOutNorm, sw.complex_output_norm).set(kAttnSplit, t.splits).set(kAttnPhase, (uint32_t)p.phase);
  };
  gpu::SpecConstants spec;
  spec.set(kAttnWG, t.workgroup).set(kAttnBQ, t.rows_per_group).set(kAttnS, t.threads_per_row)
      .set(kAttnBK, t.keys_per_tile).set(kAttnD, D).set(kAttnDC, t.merge_chunk)
      .set(kAttnRED, t.threads_per_row > 1 ? t.workgroup * t.merge_chunk : 1)
      .set(kAttnFIN, t.threads_per_row > 1 ? t.rows_per_group * D : 1).set_flag(kAttnDirectKv, t.direct_kv);
  switches(spec);
  spec.set_flag(kAttnKvApart, t.kv_apart).set(kAttnCmBlock, t.coopmat_block ? t.coopmat_block : 16)
      .set_flag(kAttnFma, t.v3.fma).set_flag(kAttnQRegs, t.v3.q_registers).set_flag(kAttnPad, t.v3.pad)
      .set(kAttnF16Chunk, t.v3.f16_chunk).set_flag(kAttnPrefetch, t.v3.prefetch).set_flag(kAttnRawF16, t.v3.raw_f16)
      .set_flag(kAttnLagE2, t.v3.lag_e2);
  auto pipe = ctx.pipelines().get<AttentionPush>(attention_kernel_name("rfa_attention", t, cache.kv_f16).c_str(), spec);
  if (!pipe) return pipe.status();
  const AttentionPush push{n_new, cache.capacity, H, cache.window, 0.f, t.lag_table ? cache.table_lags : 0u};
  const std::vector<gpu::Binding> bindings = {
      gpu::in(w.table()),      gpu::in(w.omega()),      gpu::in(w.shift_rotation()),  gpu::in(w.gain_o()),
      gpu::in(timestamps),     gpu::in(cache.q),        gpu::in(cache.k),             gpu::in(cache.v),
      gpu::in(cache.q_norm2),  gpu::in(cache.k_norm2),  gpu::in(v_norm_scratch),      gpu::out(out),
      gpu::inout(cache.row_max), gpu::inout(cache.row_sum), gpu::inout(cache.row_energy), gpu::in(*span.positions),
      gpu::in(cache.lag_table), t.splits > 1 ? gpu::out(cache.partials) : gpu::in(cache.partials),
      gpu::in(accumulated(p) ? cache.theta : *span.positions)};  // the phase ring (unread without one)
  rec.dispatch(*pipe, bindings, push, t.groups_x, H, B, "rfa_attention");
  if (t.splits == 1) return Status::Ok();
  // Split-k reduce: one thread per row merges its splits and runs the epilogue.
  gpu::SpecConstants rspec;
  rspec.set(kAttnWG, 64).set(kAttnBQ, 64).set(kAttnS, 1).set(kAttnBK, 4).set(kAttnD, D).set(kAttnDC, merge_chunk_for(D))
      .set(kAttnRED, 1).set(kAttnFIN, 1).set_flag(kAttnDirectKv, false);
  switches(rspec);
  auto reduce = ctx.pipelines().get<AttentionPush>("rfa_attention_reduce", rspec);
  if (!reduce) return reduce.status();
  std::vector<gpu::Binding> rb = bindings;
  rb[kAttnBindPartials] = gpu::in(cache.partials);
  rec.dispatch(*reduce, rb, push, gpu::workgroups(n_new, 64), H, B, "rfa_attention_reduce");
  return Status::Ok();
}

Status record_rfa_attention(gpu::Context& ctx, gpu::Recorder& rec, const AttentionWeightsGpu& w, AttentionCache& cache,
                            const gpu::Buffer& timestamps, const gpu::Buffer& q_proj, const gpu::Buffer& k_proj,
                            const gpu::Buffer& v_proj, gpu::Buffer& v_norm_scratch, gpu::Buffer& out,
                            const AttentionSpan& span) {
  if (span.n_new == 0) return Status::Ok();
  auto positions = prepare_span(rec, cache, span, w.params().sw.causal);  // recorded once for both halves
  if (!positions) return positions.status();
  const AttentionSpan resolved{span.pos0, span.n_new, *positions, span.token_ids};
  RFA_TRY(record_rfa_rotate(ctx, rec, w, cache, timestamps, q_proj, k_proj, v_proj, v_norm_scratch, resolved));
  return record_rfa_fused(ctx, rec, w, cache, timestamps, v_norm_scratch, out, resolved);
}

Status record_timestamp_append(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& new_times,
                               gpu::Buffer& timestamps, uint32_t batch, uint32_t capacity, const AttentionSpan& span) {
  if (span.n_new == 0) return Status::Ok();
  if (!span.positions) return make_error(Code::invalid_argument, "timestamp append: the span needs its positions buffer");
  RFA_TRY(check_size(new_times, (uint64_t)batch * span.n_new * 8, "new timestamps"));
  RFA_TRY(check_size(timestamps, (uint64_t)batch * capacity * 8, "timestamps"));
  auto pipe = ctx.pipelines().get<RingAppendPush>("ring_append");
  if (!pipe) return pipe.status();
  const RingAppendPush push{batch, span.n_new, capacity, 2};
  const uint64_t items = (uint64_t)batch * span.n_new * 2;
  rec.dispatch(*pipe, {gpu::in(*span.positions), gpu::in(new_times), gpu::out(timestamps)}, push,
               gpu::workgroups(items, 64), 1, 1, "ring_append");
  return Status::Ok();
}

}  // namespace rfa::ops
