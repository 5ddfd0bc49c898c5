// A loaded, validated model in host memory: architecture, sizes, f32 weights and the physical
// attention parameters of every layer. No Vulkan here: the GPU and the CPU twin both read this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rfa/params.hpp"

namespace rfa {

enum class Architecture { lm, signal, attention };
enum class NormKind { layer_norm, rms_norm, none };

const char* architecture_name(Architecture a);

// Row-major f32 tensor. Weights are converted to f32 at load whatever their stored dtype.
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t numel() const;
  bool empty() const { return data.empty(); }
};

// y = x W^T + b, W: [out, in] (PyTorch nn.Linear layout), b: [out] (may be empty: no bias).
struct LinearWeights {
  int in = 0, out = 0;
  HostTensor weight, bias;
};

// LayerNorm (weight, bias) or RMSNorm (weight only); empty when the norm is absent.
struct NormWeights {
  NormKind kind = NormKind::none;
  double eps = 1e-5;
  HostTensor weight, bias;
};

// One MultiheadIsotropicRFA layer: projections plus physical parameters.
// W_q/W_k/W_v map d_e -> 2*H*D in the reference's half-split layout (all real parts, then all
// imaginary parts, head-major); W_o maps 2*H*D -> d_e from [Re; Im].
struct AttentionLayer {
  LinearWeights wq, wk, wv, wo;
  AttentionParams params;
};

// Pre-norm block: x += RFA(norm1(x)); x += ffn2(relu(ffn1(norm2(x)))).
struct Block {
  NormWeights norm1, norm2;  // kind none when use_real_input_norm / use_real_output_norm are off
  AttentionLayer attn;
  LinearWeights ffn1, ffn2;
  bool outer_residual = true;  // false: the attention output is discarded (reference semantics)
};

struct Model {
  std::string name;          // folder name
  std::string source_dir;    // where it was loaded from
  Architecture arch = Architecture::lm;

  int d_e = 0;          // model width
  int d_in = 0;         // signal: measurement dimension
  int vocab = 0;        // lm: vocabulary size
  int n_heads = 0;      // H
  int head_dim = 0;     // D, complex dims per head
  int hidden = 0;       // FFN width
  int train_seq_len = 0;  // args.seq_len (used by scale_decay_by_time_interval)
  // The reference's t_equal: positions are the timestamps (t_i = i) and timestamps passed by the
  // caller are ignored, as the reference ignores t_measure then. False: timestamps are used when
  // given (t_i = i otherwise). Models built in code default to using them.
  bool t_equal = false;
  // args.attention_window: the window the model was trained with (0: none). Sessions whose
  // SessionOptions::window is 0 and the twin's forward pass with window 0 run with it.
  int attention_window = 0;

  // lm: token_embedding [V, d_e] (tied with lm_head.weight) and lm_head.bias [V]
  HostTensor token_embedding, lm_head_bias;
  // signal: input_proj d_in -> d_e and output_head d_e -> d_in
  LinearWeights signal_in, signal_out;
  // lm and signal: the RFATransformerNetwork backbone
  LinearWeights backbone_in, backbone_out;  // backbone.input_proj / backbone.output_proj
  NormWeights final_norm;
  std::vector<Block> blocks;
  // attention: the single layer (blocks is empty)
  AttentionLayer single;

  std::string tokenizer;  // lm: "bytes" or "gpt2" (encoder.json + vocab.bpe in the folder)
  // A GPT-2 BPE model loaded from memory (load_model_memory) keeps its two tokenizer files here;
  // a folder's model reads them from source_dir.
  std::string encoder_json, vocab_bpe;

  int num_layers() const { return arch == Architecture::attention ? 1 : (int)blocks.size(); }
  const AttentionLayer& layer(int l) const {
    return arch == Architecture::attention ? single : blocks[(size_t)l].attn;
  }
};

}  // namespace rfa
