# The kernels that are one body of shaders/common/ under a few switches, one line each. CMake writes
# each as <build>/shaders/variants/<kernel>.comp (cmake/Shaders.cmake, rfa_shader_variant):
#   #version 450
#   #extension GL_GOOGLE_include_directive : require
#   #extension <each of EXTENSIONS> : require
#   #define <NAME> <VALUE>              (for each define NAME=VALUE; a bare NAME is NAME 1)
#   #include "<body>"
# and compiles it like a hand-written shaders/*.comp: SPIR-V under its name (the registry's lookup,
# gpu/shader_registry.hpp), spirv-val, and a `<kernel>_packed` variant when it binds more than 4
# storage buffers (cmake/pack_bindings.py). A kernel with code of its own stays a .comp in shaders/.
#
# The switches the bodies read: RFA_KV_F16 (fp16 K/V caches, common/kv_storage.glsl); RFA_SDPA (the
# plain SDPA yardstick instead of RFA), RFA_REDUCE (split-k reduce), RFA_TILE (cooperative tile),
# RFA_TILE_F16 (fp16 products), RFA_TILE_CM (cooperative matrices; VK_NV_cooperative_matrix,
# 16 x 16 x 16, fp16 x fp16 + fp32, and shaderFloat16), RFA_TILE_CK (with RFA_TILE_CM: the same on
# VK_KHR_cooperative_matrix, the device's square fp16 shape; TOOLS next: glslang 15), RFA_TILE_PE
# (with RFA_TILE_CK: pair terms, softmax and output on the matrices by GL_NV_cooperative_matrix2's
# per-element operations and reductions, common/attention_tile_walk_pe.glsl),
# RFA_TILE_CM_EMU (each matrix operation emulated by the subgroup's lanes: tests the layout anywhere), RFA_ROW_SG (reductions over the S
# lanes of a row, common/row_group_reduce.glsl: the tiles' row max and sum (the cooperative-matrix
# tile always by shuffles, RFA_ROW_SG=2: the host requires them with the matrices), the direct walk's
# merge of its S partial states; 1 clustered subgroup reductions, the *_sg kernels, for
# devices with subgroup arithmetic and clustered operations in compute; 2 subgroupShuffleXor
# butterflies, the *_sx kernels, where shuffles are there but clustered operations are not, as on
# lavapipe and MoltenVK; without either a shared-memory exchange), all in
# common/attention_body.glsl;
# SAMPLE_F64 (probabilities in fp64, devices with shaderFloat64; common/sample_body.glsl).

set(F16 GL_EXT_shader_explicit_arithmetic_types_float16)
set(CM ${F16} GL_NV_cooperative_matrix GL_KHR_shader_subgroup_basic GL_KHR_shader_subgroup_shuffle GL_KHR_memory_scope_semantics)
set(CM_EMU ${F16} GL_KHR_shader_subgroup_basic GL_KHR_shader_subgroup_shuffle)
# VK_KHR_cooperative_matrix (glslang 15: TOOLS next).
set(CK ${F16} GL_KHR_cooperative_matrix GL_KHR_shader_subgroup_basic GL_KHR_shader_subgroup_shuffle GL_KHR_memory_scope_semantics)
# GL_NV_cooperative_matrix2 on top (per-element operations, row reductions, accumulator -> A
# conversions: the *_tile_pe kernels; glslang 15).
set(PE ${CK} GL_NV_cooperative_matrix2)
set(SG GL_KHR_shader_subgroup_basic GL_KHR_shader_subgroup_clustered)
set(SX GL_KHR_shader_subgroup_basic GL_KHR_shader_subgroup_shuffle)

#                  kernel                          body                      defines, then EXTENSIONS
# Fused RFA attention over the rotated caches and the SDPA yardstick (same tiling): direct (its
# merge by subgroup operations: *_sg, *_sx), split-k reduce, cooperative tile, fp16 products,
# cooperative matrices (real or emulated); fp32 or fp16 caches.
rfa_shader_variant(rfa_attention                  attention_body.glsl       RFA_SDPA=0)
rfa_shader_variant(rfa_attention_kv16             attention_body.glsl       RFA_SDPA=0 RFA_KV_F16)
rfa_shader_variant(rfa_attention_reduce           attention_body.glsl       RFA_SDPA=0 RFA_REDUCE)
rfa_shader_variant(rfa_attention_sg               attention_body.glsl       RFA_SDPA=0 RFA_ROW_SG EXTENSIONS ${SG})
rfa_shader_variant(rfa_attention_sg_kv16          attention_body.glsl       RFA_SDPA=0 RFA_ROW_SG RFA_KV_F16 EXTENSIONS ${SG})
rfa_shader_variant(rfa_attention_sx               attention_body.glsl       RFA_SDPA=0 RFA_ROW_SG=2 EXTENSIONS ${SX})
rfa_shader_variant(rfa_attention_sx_kv16          attention_body.glsl       RFA_SDPA=0 RFA_ROW_SG=2 RFA_KV_F16 EXTENSIONS ${SX})
rfa_shader_variant(rfa_attention_tile             attention_body.glsl       RFA_SDPA=0 RFA_TILE)
rfa_shader_variant(rfa_attention_tile_kv16        attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_KV_F16)
rfa_shader_variant(rfa_attention_tile_f16         attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_TILE_F16 EXTENSIONS ${F16})
rfa_shader_variant(rfa_attention_tile_f16_kv16    attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_KV_F16 RFA_TILE_F16 EXTENSIONS ${F16})
rfa_shader_variant(rfa_attention_tile_sg          attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_ROW_SG EXTENSIONS ${SG})
rfa_shader_variant(rfa_attention_tile_sg_kv16     attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_ROW_SG RFA_KV_F16 EXTENSIONS ${SG})
rfa_shader_variant(rfa_attention_tile_f16_sg      attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_TILE_F16 RFA_ROW_SG EXTENSIONS ${F16} ${SG})
rfa_shader_variant(rfa_attention_tile_f16_sg_kv16 attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_KV_F16 RFA_TILE_F16 RFA_ROW_SG EXTENSIONS ${F16} ${SG})
rfa_shader_variant(rfa_attention_tile_sx          attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_ROW_SG=2 EXTENSIONS ${SX})
rfa_shader_variant(rfa_attention_tile_sx_kv16     attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_ROW_SG=2 RFA_KV_F16 EXTENSIONS ${SX})
rfa_shader_variant(rfa_attention_tile_f16_sx      attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_TILE_F16 RFA_ROW_SG=2 EXTENSIONS ${F16} ${SX})
rfa_shader_variant(rfa_attention_tile_f16_sx_kv16 attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_KV_F16 RFA_TILE_F16 RFA_ROW_SG=2 EXTENSIONS ${F16} ${SX})
rfa_shader_variant(rfa_attention_tile_cm          attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_ROW_SG=2 RFA_TILE_CM EXTENSIONS ${CM})
rfa_shader_variant(rfa_attention_tile_cm_kv16     attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_KV_F16 RFA_ROW_SG=2 RFA_TILE_CM EXTENSIONS ${CM})
rfa_shader_variant(rfa_attention_tile_cm_emu      attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CM_EMU EXTENSIONS ${CM_EMU})
rfa_shader_variant(rfa_attention_tile_ck          attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CK TOOLS next EXTENSIONS ${CK})
rfa_shader_variant(rfa_attention_tile_ck_kv16     attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_KV_F16 RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CK TOOLS next EXTENSIONS ${CK})
rfa_shader_variant(rfa_attention_tile_pe          attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CK RFA_TILE_PE TOOLS next TARGET vulkan1.3 EXTENSIONS ${PE})
rfa_shader_variant(rfa_attention_tile_pe_kv16     attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_KV_F16 RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CK RFA_TILE_PE TOOLS next TARGET vulkan1.3 EXTENSIONS ${PE})
rfa_shader_variant(rfa_attention_tile_cm_emu_kv16 attention_body.glsl       RFA_SDPA=0 RFA_TILE RFA_KV_F16 RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CM_EMU EXTENSIONS ${CM_EMU})
rfa_shader_variant(sdpa                           attention_body.glsl       RFA_SDPA)
rfa_shader_variant(sdpa_kv16                      attention_body.glsl       RFA_SDPA RFA_KV_F16)
rfa_shader_variant(sdpa_reduce                    attention_body.glsl       RFA_SDPA RFA_REDUCE)
rfa_shader_variant(sdpa_sg                        attention_body.glsl       RFA_SDPA RFA_ROW_SG EXTENSIONS ${SG})
rfa_shader_variant(sdpa_sg_kv16                   attention_body.glsl       RFA_SDPA RFA_ROW_SG RFA_KV_F16 EXTENSIONS ${SG})
rfa_shader_variant(sdpa_sx                        attention_body.glsl       RFA_SDPA RFA_ROW_SG=2 EXTENSIONS ${SX})
rfa_shader_variant(sdpa_sx_kv16                   attention_body.glsl       RFA_SDPA RFA_ROW_SG=2 RFA_KV_F16 EXTENSIONS ${SX})
rfa_shader_variant(sdpa_tile                      attention_body.glsl       RFA_SDPA RFA_TILE)
rfa_shader_variant(sdpa_tile_kv16                 attention_body.glsl       RFA_SDPA RFA_TILE RFA_KV_F16)
rfa_shader_variant(sdpa_tile_f16                  attention_body.glsl       RFA_SDPA RFA_TILE RFA_TILE_F16 EXTENSIONS ${F16})
rfa_shader_variant(sdpa_tile_f16_kv16             attention_body.glsl       RFA_SDPA RFA_TILE RFA_KV_F16 RFA_TILE_F16 EXTENSIONS ${F16})
rfa_shader_variant(sdpa_tile_sg                   attention_body.glsl       RFA_SDPA RFA_TILE RFA_ROW_SG EXTENSIONS ${SG})
rfa_shader_variant(sdpa_tile_sg_kv16              attention_body.glsl       RFA_SDPA RFA_TILE RFA_ROW_SG RFA_KV_F16 EXTENSIONS ${SG})
rfa_shader_variant(sdpa_tile_f16_sg               attention_body.glsl       RFA_SDPA RFA_TILE RFA_TILE_F16 RFA_ROW_SG EXTENSIONS ${F16} ${SG})
rfa_shader_variant(sdpa_tile_f16_sg_kv16          attention_body.glsl       RFA_SDPA RFA_TILE RFA_KV_F16 RFA_TILE_F16 RFA_ROW_SG EXTENSIONS ${F16} ${SG})
rfa_shader_variant(sdpa_tile_sx                   attention_body.glsl       RFA_SDPA RFA_TILE RFA_ROW_SG=2 EXTENSIONS ${SX})
rfa_shader_variant(sdpa_tile_sx_kv16              attention_body.glsl       RFA_SDPA RFA_TILE RFA_ROW_SG=2 RFA_KV_F16 EXTENSIONS ${SX})
rfa_shader_variant(sdpa_tile_f16_sx               attention_body.glsl       RFA_SDPA RFA_TILE RFA_TILE_F16 RFA_ROW_SG=2 EXTENSIONS ${F16} ${SX})
rfa_shader_variant(sdpa_tile_f16_sx_kv16          attention_body.glsl       RFA_SDPA RFA_TILE RFA_KV_F16 RFA_TILE_F16 RFA_ROW_SG=2 EXTENSIONS ${F16} ${SX})
rfa_shader_variant(sdpa_tile_cm                   attention_body.glsl       RFA_SDPA RFA_TILE RFA_ROW_SG=2 RFA_TILE_CM EXTENSIONS ${CM})
rfa_shader_variant(sdpa_tile_cm_kv16              attention_body.glsl       RFA_SDPA RFA_TILE RFA_KV_F16 RFA_ROW_SG=2 RFA_TILE_CM EXTENSIONS ${CM})
rfa_shader_variant(sdpa_tile_cm_emu               attention_body.glsl       RFA_SDPA RFA_TILE RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CM_EMU EXTENSIONS ${CM_EMU})
rfa_shader_variant(sdpa_tile_ck                   attention_body.glsl       RFA_SDPA RFA_TILE RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CK TOOLS next EXTENSIONS ${CK})
rfa_shader_variant(sdpa_tile_ck_kv16              attention_body.glsl       RFA_SDPA RFA_TILE RFA_KV_F16 RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CK TOOLS next EXTENSIONS ${CK})
rfa_shader_variant(sdpa_tile_pe                   attention_body.glsl       RFA_SDPA RFA_TILE RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CK RFA_TILE_PE TOOLS next TARGET vulkan1.3 EXTENSIONS ${PE})
rfa_shader_variant(sdpa_tile_pe_kv16              attention_body.glsl       RFA_SDPA RFA_TILE RFA_KV_F16 RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CK RFA_TILE_PE TOOLS next TARGET vulkan1.3 EXTENSIONS ${PE})
rfa_shader_variant(sdpa_tile_cm_emu_kv16          attention_body.glsl       RFA_SDPA RFA_TILE RFA_KV_F16 RFA_ROW_SG=2 RFA_TILE_CM RFA_TILE_CM_EMU EXTENSIONS ${CM_EMU})
# Fused AFA (Adaptive Filter Attention) and RT-RFA (directional RFA on the sphere) attention.
rfa_shader_variant(afa_attention                  afa_attention_body.glsl)
rfa_shader_variant(afa_attention_kv16             afa_attention_body.glsl   RFA_KV_F16)
rfa_shader_variant(afa_full_attention             afa_full_attention_body.glsl)
rfa_shader_variant(afa_full_attention_kv16        afa_full_attention_body.glsl RFA_KV_F16)
rfa_shader_variant(rt_attention                   rt_attention_body.glsl)
rfa_shader_variant(rt_attention_kv16              rt_attention_body.glsl    RFA_KV_F16)
# Input norm and rotation into the stationary frame (fills the caches).
rfa_shader_variant(rfa_rotate                     rfa_rotate_body.glsl)
rfa_shader_variant(rfa_rotate_kv16                rfa_rotate_body.glsl      RFA_KV_F16)
# Exact attention rectangles and row diagnostics (the probes), per mechanism.
rfa_shader_variant(rfa_probe                      rfa_probe_body.glsl)
rfa_shader_variant(rfa_probe_kv16                 rfa_probe_body.glsl       RFA_KV_F16)
rfa_shader_variant(afa_probe                      afa_probe_body.glsl)
rfa_shader_variant(afa_probe_kv16                 afa_probe_body.glsl       RFA_KV_F16)
rfa_shader_variant(afa_full_probe                 afa_full_probe_body.glsl)
rfa_shader_variant(afa_full_probe_kv16            afa_full_probe_body.glsl  RFA_KV_F16)
rfa_shader_variant(rt_probe                       rt_probe_body.glsl)
rfa_shader_variant(rt_probe_kv16                  rt_probe_body.glsl        RFA_KV_F16)
# Attention tomography rows, per mechanism.
rfa_shader_variant(rfa_tomography                 rfa_tomography_body.glsl)
rfa_shader_variant(rfa_tomography_kv16            rfa_tomography_body.glsl  RFA_KV_F16)
rfa_shader_variant(afa_tomography                 afa_tomography_body.glsl)
rfa_shader_variant(afa_tomography_kv16            afa_tomography_body.glsl  RFA_KV_F16)
rfa_shader_variant(afa_full_tomography            afa_full_tomography_body.glsl)
rfa_shader_variant(afa_full_tomography_kv16       afa_full_tomography_body.glsl RFA_KV_F16)
rfa_shader_variant(rt_tomography                  rt_tomography_body.glsl)
rfa_shader_variant(rt_tomography_kv16             rt_tomography_body.glsl   RFA_KV_F16)
# Token sampling with probabilities in fp32, or fp64 on devices with shaderFloat64.
rfa_shader_variant(sample                         sample_body.glsl          SAMPLE_F64=0)
rfa_shader_variant(sample_f64                     sample_body.glsl          SAMPLE_F64)
