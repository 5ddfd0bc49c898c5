#include "ops/sdpa.hpp"

#include <algorithm>
#include <cmath>
#include <string>

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
  const AttentionTiling t = choose_attention_tiling(ctx.caps(), ctx.kernels(), n_new, D);
  // constant_id 0: WG, 1: BQ, 2: S, 3: BK, 4: D, 5: DC, 6: RED, 7: FIN, 8: CAUSAL (as rfa_attention),
  // 9: DIRECT_KV
  gpu::SpecConstants spec;
  spec.u32(t.workgroup).u32(t.rows_per_group).u32(t.threads_per_row).u32(t.keys_per_tile).u32(D).u32(t.merge_chunk)
      .u32(t.threads_per_row > 1 ? t.workgroup * t.merge_chunk : 1).u32(t.threads_per_row > 1 ? t.rows_per_group * D : 1)
      .flag(causal).flag(t.direct_kv);
  auto pipe = ctx.pipelines().get<shader::AttentionPush>("sdpa", spec);
  if (!pipe) return pipe.status();
  const shader::AttentionPush push{n_new, cache.capacity, H, cache.window,
                                   scale > 0.f ? scale : (float)(1.0 / std::sqrt(2.0 * D))};
  rec.dispatch(**pipe,
               {gpu::in(cache.q), gpu::in(cache.k), gpu::in(cache.v), gpu::out(out), gpu::inout(cache.row_max),
                gpu::inout(cache.row_sum), gpu::in(**positions)},
               &push, t.groups_x, H, B, "sdpa");
  return Status::Ok();
}

}  // namespace rfa::ops
