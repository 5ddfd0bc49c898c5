#include "ops/embed.hpp"

#include <string>

#include "gpu/pipeline.hpp"
#include "push_layouts.h"

namespace rfa::ops {

Status record_embed(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& ids, const gpu::Buffer& table,
                    const gpu::Buffer& y, uint32_t rows, uint32_t dim) {
  if (ids.size < (uint64_t)rows * 4 || y.size < (uint64_t)rows * dim * 4 || table.size < (uint64_t)dim * 4)
    return Status(Code::invalid_argument, "embed: buffers smaller than " + std::to_string(rows) + " ids x " +
                                              std::to_string(dim) + " dims");
  const shader::EmbedPush push{rows, dim};
  auto pipe = ctx.pipelines().get<shader::EmbedPush>("embed");
  if (!pipe) return pipe.status();
  rec.dispatch(*pipe, {gpu::in(ids), gpu::in(table), gpu::out(y)}, push, gpu::workgroups(dim, 64), rows, 1, "embed");
  return Status::Ok();
}

}  // namespace rfa::ops
