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
float row_group_max(float x) {
  if (S == 64) return subgroupClusteredMax(x, 64);
  if (S == 32) return subgroupClusteredMax(x, 32);
  if (S == 16) return subgroupClusteredMax(x, 16);
  if (S == 8) return subgroupClusteredMax(x, 8);
  if (S == 4) return subgroupClusteredMax(x, 4);
  if (S == 2) return subgroupClusteredMax(x, 2);
  return x;
}
float row_group_add(float x) {
  if (S == 64) return subgroupClusteredAdd(x, 64);
  if (S == 32) return subgroupClusteredAdd(x, 32);
  if (S == 16) return subgroupClusteredAdd(x, 16);
  if (S == 8) return subgroupClusteredAdd(x, 8);
  if (S == 4) return subgroupClusteredAdd(x, 4);
  if (S == 2) return subgroupClusteredAdd(x, 2);
  return x;
}
vec2 row_group_add(vec2 x) {
  if (S == 64) return subgroupClusteredAdd(x, 64);
  if (S == 32) return subgroupClusteredAdd(x, 32);
  if (S == 16) return subgroupClusteredAdd(x, 16);
  if (S == 8) return subgroupClusteredAdd(x, 8);
  if (S == 4) return subgroupClusteredAdd(x, 4);
  if (S == 2) return subgroupClusteredAdd(x, 2);
  return x;
}
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
