// Token embedding lookup: y[r, :] = table[ids[r], :].
#pragma once

#include <cstdint>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"

namespace rfa::ops {

// ids: [rows] uint32, range-checked by the caller against the table's `vocab` rows; table:
// [vocab, dim]; y: [rows, dim].
Status record_embed(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& ids, const gpu::Buffer& table,
                    const gpu::Buffer& y, uint32_t rows, uint32_t dim);

}  // namespace rfa::ops
