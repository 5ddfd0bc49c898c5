#include "ops/sdpa.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/pipeline.hpp"
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
  // constant_id 0: WG, 1: BQ, 2: S, 3: BK, 4: D, 5: DC, 6: RED, 7: FIN, 8: CAUSAL (as rfa_attention),
  // 9: DIRECT_KV, 10: SPLIT
  gpu::SpecConstants spec;
  spec.u32(t.workgroup).u32(t.rows_per_group).u32(t.threads_per_row).u32(t.keys_per_tile).u32(D).u32(t.merge_chunk)
      .u32(t.threads_per_row > 1 ? t.workgroup * t.merge_chunk : 1).u32(t.threads_per_row > 1 ? t.rows_per_group * D : 1)
      .flag(causal).flag(t.direct_kv).u32(t.splits);
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
    rspec.u32(64).u32(64).u32(1).u32(4).u32(D).u32(merge_chunk_for(D)).u32(1).u32(1).flag(causal).flag(false)
        .u32(t.splits);
    auto reduce = ctx.pipelines().get<shader::AttentionPush>("sdpa_reduce", rspec);
    if (!reduce) return reduce.status();
    bindings[7] = gpu::in(cache.partials);
    rec.dispatch(*reduce, bindings, push, gpu::workgroups(n_new, 64), H, B, "sdpa_reduce");
  }
  return Status::Ok();
}

}  // namespace rfa::ops
