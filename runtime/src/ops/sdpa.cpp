#include "ops/sdpa.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/pipeline.hpp"
#include "kernel_ids.h"
#include "push_layouts.h"

namespace rfa::ops {

Status record_sdpa(gpu::Context& ctx, gpu::Recorder& rec, AttentionCache& cache, gpu::Buffer& out, uint32_t pos0,
                   uint32_t n_new, bool causal, float scale) {
  const uint32_t H = cache.heads, D = cache.dim, B = cache.batch;
  if (n_new == 0) return Status::Ok();
  auto positions = prepare_span(rec, cache, AttentionSpan{pos0, n_new, nullptr}, causal);
  if (!positions) return positions.status();
  if (out.size < (uint64_t)B * n_new * 2 * H * D * 4)
    return make_error(Code::invalid_argument, "sdpa: output smaller than [B*n_new, 2*H*D]");
  const AttentionTiling t = choose_attention_tiling(ctx.caps(), ctx.kernels(), n_new, D, B * H, cache.capacity);
  using namespace shader;  // the ids: kernel_ids.h
  gpu::SpecConstants spec;
  spec.set(kAttnWG, t.workgroup).set(kAttnBQ, t.rows_per_group).set(kAttnS, t.threads_per_row)
      .set(kAttnBK, t.keys_per_tile).set(kAttnD, D).set(kAttnDC, t.merge_chunk)
      .set(kAttnRED, t.threads_per_row > 1 ? t.workgroup * t.merge_chunk : 1)
      .set(kAttnFIN, t.threads_per_row > 1 ? t.rows_per_group * D : 1).set_flag(kAttnCausal, causal)
      .set_flag(kSdpaDirectKv, t.direct_kv).set(kSdpaSplit, t.splits).set_flag(kSdpaKvApart, t.kv_apart)
      .set(kSdpaCmBlock, t.coopmat_block ? t.coopmat_block : 16).set_flag(kSdpaFma, t.v3.fma)
      .set_flag(kSdpaQRegs, t.v3.q_registers).set_flag(kSdpaPad, t.v3.pad).set(kSdpaF16Chunk, t.v3.f16_chunk)
      .set_flag(kSdpaPrefetch, t.v3.prefetch).set_flag(kSdpaRawF16, t.v3.raw_f16);
  auto pipe = ctx.pipelines().get<shader::AttentionPush>(attention_kernel_name("sdpa", t, cache.kv_f16).c_str(), spec);
  if (!pipe) return pipe.status();
  const shader::AttentionPush push{n_new, cache.capacity, H, cache.window,
                                   scale > 0.f ? scale : (float)(1.0 / std::sqrt(2.0 * D)), 0u};
  std::vector<gpu::Binding> bindings = {
      gpu::in(cache.q),          gpu::in(cache.k),         gpu::in(cache.v),     gpu::out(out),
      gpu::inout(cache.row_max), gpu::inout(cache.row_sum), gpu::in(**positions),
      t.splits > 1 ? gpu::out(cache.partials) : gpu::in(cache.partials)};
  rec.dispatch(*pipe, bindings, push, t.groups_x, H, B, "sdpa");
  if (t.splits > 1) {
    gpu::SpecConstants rspec;  // the reduce pass: one thread per row
    rspec.set(kAttnWG, 64).set(kAttnBQ, 64).set(kAttnS, 1).set(kAttnBK, 4).set(kAttnD, D)
        .set(kAttnDC, merge_chunk_for(D)).set(kAttnRED, 1).set(kAttnFIN, 1).set_flag(kAttnCausal, causal)
        .set_flag(kSdpaDirectKv, false).set(kSdpaSplit, t.splits);
    auto reduce = ctx.pipelines().get<shader::AttentionPush>("sdpa_reduce", rspec);
    if (!reduce) return reduce.status();
    bindings[kSdpaBindPartials] = gpu::in(cache.partials);
    rec.dispatch(*reduce, bindings, push, gpu::workgroups(n_new, 64), H, B, "sdpa_reduce");
  }
  return Status::Ok();
}

}  // namespace rfa::ops
