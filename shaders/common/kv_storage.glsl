// How the K and V caches are stored: fp32 (a vec2 per complex component) or, with RFA_KV_F16,
// fp16 pairs packed in a uint (packHalf2x16: half the memory and bandwidth of long contexts, and
// no 16-bit storage feature needed). Readers unpack to vec2 and do all arithmetic in fp32. Values
// beyond fp16's range (65504) are clamped to it rather than stored as infinities.
#ifndef RFA_KV_STORAGE_GLSL
#define RFA_KV_STORAGE_GLSL
#ifndef RFA_KV_F16
#define RFA_KV_F16 0
#endif
#if RFA_KV_F16
#define KV_T uint
#define KV_T_WORDS 1u  // 32-bit words per element (cmake/pack_bindings.py sizes packed tensors by it)
#define KV_LOAD(x) unpackHalf2x16(x)
#define KV_STORE(v) packHalf2x16(clamp((v), vec2(-65504.0), vec2(65504.0)))
#else
#define KV_T vec2
#define KV_T_WORDS 2u
#define KV_LOAD(x) (x)
#define KV_STORE(v) (v)
#endif
#endif
