// The cooperative tile of the fused attention kernel (RFA_TILE 1; the GPU path for prefill), built
// like the flash-attention kernels of GPU libraries: a workgroup of WG threads owns BQ query rows;
// per tile of BK keys it runs four phases, each spread over all its threads:
//   A. logits as a small GEMM: thread (tr, tc) forms a TR x TC block of cross terms Re(conj(Q~) K~)
//      (rows tr + NR a, keys tc + S b) from the Q tile and the K tile in shared memory, so each
//      value it loads serves TC (or TR) multiply-adds instead of one;
//   B. the pair terms, once per (row, key) pair over a flat index: lag, E, B, P (the lag table for
//      integer lags), the Mahalanobis residual and the Student-t logit, the causal/window mask;
//      meanwhile the V tile replaces the K tile;
//   C. the online softmax, one thread per row: the tile's row maximum, the rescale factor of the
//      row's accumulators, and p E (RFA's decayed weight) written over the logit;
//   D. the value aggregation as a second small GEMM: thread (tr, tc) accumulates TR rows x TD
//      complex dims (dims tc + S e) in registers.
// After the last tile the accumulators go through shared memory to one thread per row, which
// holds that row's (m, l) from phase C and runs the kernel's epilogue unchanged.
//
// Shapes (specialization constants, chosen by ops::choose_attention_tiling): S threads share a row
// group (S divides D and BK), NR = WG / S row threads, TR = BQ / NR rows, TC = BK / S keys and
// TD = D / S dims per thread. Strides are padded by one element so that the S threads of a row
// group read different banks. With RFA_TILE_F16 the Q, K and V tiles hold fp16 and the products
// of phases A and D are fp16 (one rounding each); every sum, the softmax statistics and the
// accumulators stay fp32 (docs/math.md §9 bounds the error).
#ifndef RFA_ATTENTION_TILE_GLSL
#define RFA_ATTENTION_TILE_GLSL

#ifndef RFA_TILE_F16
#define RFA_TILE_F16 0
#endif
#if RFA_TILE_F16
#define TILE_T f16vec2
#define TILE_DOT(a, b) float(dot(a, b))
#define TILE_WEIGHTED(p, v) vec2(float16_t(p) * (v))
#else
#define TILE_T vec2
#define TILE_DOT(a, b) dot(a, b)
#define TILE_WEIGHTED(p, v) ((p) * (v))
#endif

const uint NR = WG / S;    // row threads
const uint TR = BQ / NR;   // rows per thread
const uint TC = BK / S;    // keys per thread (phase A)
const uint TD = D / S;     // complex dims per thread (phase D)
const uint DP = D + 1;     // padded row strides
const uint BKP = BK + 1;
const uint OUT_CHUNK = D < BKP ? D : BK;  // dims per round of the final hand-over (fits tpe)

shared TILE_T tq[BQ * DP];    // the Q tile (SDPA: times the scale)
shared TILE_T tkv[BK * DP];   // the K tile (phase A), then the V tile (phase D)
shared vec2 tpe[BQ * BKP];    // per pair (logit, E), then (p E, E); finally the output hand-over
shared float tscale[BQ];      // each row's rescale factor for this tile
#if !RFA_SDPA
const uint EN_SIZE = GATE ? BQ * BKP : 1;
shared float ten[EN_SIZE];    // the gate's per-pair energy
shared float tkn[BK];         // |K~|^2 and (hi, lo) times of the tile's keys
shared vec2 tkt[BK];
shared float tqn[BQ];         // |Q~|^2 and (hi, lo) times of the rows
shared vec2 tqt[BQ];
#endif

#endif
