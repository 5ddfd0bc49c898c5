// Reductions over a row group: the S consecutive lanes that share one query row (the direct walk's
// S threads per row, the scalar tile's S threads per row group) in both paths of the fused
// attention kernel (common/attention_body.glsl). RFA_ROW_SG chooses how (ops::row_subgroup_reduce):
// - 1: clustered subgroup reductions (the *_sg kernels; devices with subgroup arithmetic and
//   clustered operations in compute);
// - 2: log2(S) butterfly steps of subgroupShuffleXor (the *_sx kernels; shuffles but no clustered
//   operations: lavapipe, MoltenVK); lane masks below S stay inside the group's aligned S lanes;
// - 0: not declared; the callers exchange through shared memory.
// The host runs 1 and 2 only where S is a power of two, at most the subgroup's size, and the
// workgroup whole subgroups; the callers number their threads by subgroup lanes
// (gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID) so that a row group is one aligned
// cluster of S lanes. Every branch is on the specialization constant S, the same for every lane.
// Every lane gets the group's result.
#ifndef RFA_ROW_SG
#define RFA_ROW_SG 0
#endif
#if RFA_ROW_SG == 1
// The cluster size must be a literal: one branch per power of two, on the constant S.
#define RFA_CLUSTERED(op, x) \
  (S == 64 ? op(x, 64) : S == 32 ? op(x, 32) : S == 16 ? op(x, 16) : S == 8 ? op(x, 8) : S == 4 ? op(x, 4) : S == 2 ? op(x, 2) : (x))
float row_group_max(float x) { return RFA_CLUSTERED(subgroupClusteredMax, x); }
float row_group_add(float x) { return RFA_CLUSTERED(subgroupClusteredAdd, x); }
vec2 row_group_add(vec2 x) { return RFA_CLUSTERED(subgroupClusteredAdd, x); }
#elif RFA_ROW_SG == 2
float row_group_max(float x) {
  [[unroll]] for (uint w = 1; w < S; w *= 2) x = max(x, subgroupShuffleXor(x, w));
  return x;
}
float row_group_add(float x) {
  [[unroll]] for (uint w = 1; w < S; w *= 2) x += subgroupShuffleXor(x, w);
  return x;
}
vec2 row_group_add(vec2 x) {
  [[unroll]] for (uint w = 1; w < S; w *= 2) x += subgroupShuffleXor(x, w);
  return x;
}
#endif
