#include "model/loader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "mechanisms/mechanism.hpp"
#include "model/physics.hpp"
#include "model/tensor_reader.hpp"

namespace rfa {


namespace {

Result<LinearWeights> load_linear(TensorReader& r, const std::string& prefix, int in, int out) {
  LinearWeights l;
  l.in = in;
  l.out = out;
  auto w = r.f32(prefix + ".weight", {out, in});
  if (!w) return w.status();
  auto b = r.f32(prefix + ".bias", {out});
  if (!b) return b.status();
  l.weight = w.take();
  l.bias = b.take();
  return l;
}

// A LayerNorm (weight + bias) or RMSNorm (weight). When `used` is false (the block's flag is off)
// the reference still holds the module: its tensors may be present, are shape-checked, not used.
Result<NormWeights> load_norm(TensorReader& r, const std::string& prefix, const ModelConfig& cfg, int d, bool used) {
  NormWeights n;
  if (cfg.norm == NormKind::none) return n;
  if (!used) {
    RFA_TRY(r.optional_unused(prefix + ".weight", {d}));
    if (cfg.norm == NormKind::layer_norm) RFA_TRY(r.optional_unused(prefix + ".bias", {d}));
    return n;
  }
  n.kind = cfg.norm;
  n.eps = cfg.norm_eps;
  auto w = r.f32(prefix + ".weight", {d});
  if (!w) return w.status();
  n.weight = w.take();
  if (cfg.norm == NormKind::layer_norm) {
    auto b = r.f32(prefix + ".bias", {d});
    if (!b) return b.status();
    n.bias = b.take();
  }
  return n;
}

Result<AttentionLayer> load_attention(TensorReader& r, const std::string& p, const ModelConfig& cfg, int layer_index) {
  const ReferenceArgs& a = cfg.args;
  const int de = a.d_e;
  AttentionLayer layer;
  RFA_ASSIGN(layer.wq, load_linear(r, p + "W_q", de, 2 * a.d_k_total));
  RFA_ASSIGN(layer.wk, load_linear(r, p + "W_k", de, 2 * a.d_k_total));
  RFA_ASSIGN(layer.wv, load_linear(r, p + "W_v", de, 2 * a.d_v_total));
  RFA_ASSIGN(layer.wo, load_linear(r, p + "W_o", 2 * a.d_v_total, de));

  // Derived buffers (pure functions of the length; 192 MiB per layer in the reference).
  for (const char* b : {"t_measure", "abs_idx", "causal_mask"}) r.ignore(p + b);
  // The layer's own tensors and physics: its mechanism's (RFA's, AFA's, RT-RFA's).
  RFA_ASSIGN(layer.params, mech::mechanism_of(cfg.variant).load_params(r, p, cfg, layer_index));
  return layer;
}

std::string folder_name(const std::string& dir) {
  std::filesystem::path p(dir);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "models/x/" -> "x"
  std::string n = p.filename().string();
  return n.empty() || n == "." ? std::filesystem::absolute(p).filename().string() : n;
}

}  // namespace


Result<Model> build_model(const ModelConfig& cfg, const SafetensorsFile& st, const std::string& dir) {
  const ReferenceArgs& a = cfg.args;
  TensorReader r(st);
  Model m;
  m.name = folder_name(dir);
  m.source_dir = dir;
  m.arch = cfg.arch;
  m.d_e = a.d_e;
  m.n_heads = a.n_heads;
  m.head_dim = cfg.head_dim();
  m.train_seq_len = a.seq_len;
  m.t_equal = a.t_equal;
  m.attention_window = cfg.attention_window;
  const int de = a.d_e;

  if (cfg.arch == Architecture::attention) {
    RFA_ASSIGN(m.single, load_attention(r, "", cfg, 0));
    RFA_TRY(r.unexpected());
    return m;
  }

  m.hidden = cfg.hidden_dim;
  if (cfg.arch == Architecture::lm) {
    m.vocab = a.vocab_size;
    m.tokenizer = cfg.tokenizer;
    const std::vector<int64_t> emb = {a.vocab_size, de};
    // lm_head.weight IS token_embedding.weight in the reference. An exporter that de-duplicates
    // shared tensors keeps one of the two names; when both are present they must agree.
    const bool has_emb = r.has("token_embedding.weight"), has_head = r.has("lm_head.weight");
    RFA_ASSIGN(m.token_embedding, r.f32(has_emb || !has_head ? "token_embedding.weight" : "lm_head.weight", emb));
    if (has_emb && has_head) {
      HostTensor head;
      RFA_ASSIGN(head, r.f32("lm_head.weight", emb));
      for (size_t i = 0; i < head.data.size(); ++i)
        if (head.data[i] != m.token_embedding.data[i])
          return make_error(Code::model_error,
                            st.label() + ": tensor 'lm_head.weight' differs from 'token_embedding.weight' at element " +
                                std::to_string(i) + " (the reference ties them: they must be equal)");
    }
    RFA_ASSIGN(m.lm_head_bias, r.f32("lm_head.bias", {a.vocab_size}));
  } else {
    m.d_in = cfg.d_in;
    RFA_ASSIGN(m.signal_in, load_linear(r, "input_proj", cfg.d_in, de));
    RFA_ASSIGN(m.signal_out, load_linear(r, "output_head", de, cfg.d_in));
  }
  RFA_ASSIGN(m.backbone_in, load_linear(r, "backbone.input_proj", de, de));
  m.blocks.resize((size_t)a.num_blocks);
  for (int l = 0; l < a.num_blocks; ++l) {
    const std::string p = "backbone.blocks." + std::to_string(l) + ".";
    Block& b = m.blocks[(size_t)l];
    RFA_ASSIGN(b.norm1, load_norm(r, p + "norm1", cfg, de, a.use_real_input_norm));
    RFA_ASSIGN(b.attn, load_attention(r, p + "attn.", cfg, l));
    RFA_ASSIGN(b.norm2, load_norm(r, p + "norm2", cfg, de, a.use_real_output_norm));
    RFA_ASSIGN(b.ffn1, load_linear(r, p + "ffn.0", de, cfg.hidden_dim));
    RFA_ASSIGN(b.ffn2, load_linear(r, p + "ffn.2", cfg.hidden_dim, de));
    b.outer_residual = a.use_outer_residual;
  }
  RFA_ASSIGN(m.final_norm, load_norm(r, "backbone.final_norm", cfg, de, true));
  RFA_ASSIGN(m.backbone_out, load_linear(r, "backbone.output_proj", de, de));
  RFA_TRY(r.unexpected());
  return m;
}

Result<Model> load_model(const std::string& dir) {
  try {
    const std::filesystem::path root(dir);
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec))
      return make_error(Code::io_error, dir + ": not a model folder (a directory with config.json and model.safetensors)");
    auto cfg = load_config((root / "config.json").string());
    if (!cfg) return cfg.status();
    auto st = SafetensorsFile::open((root / "model.safetensors").string());
    if (!st) return st.status();
    return build_model(*cfg, *st, dir);
  } catch (const std::bad_alloc&) {
    return make_error(Code::out_of_memory, dir + ": out of host memory while loading the model");
  } catch (const std::exception& ex) {
    return make_error(Code::model_error, dir + ": " + ex.what());
  }
}

Result<Model> load_model_files(const std::string& name, std::string_view config_json, const void* safetensors,
                                size_t safetensors_bytes, std::string_view encoder_json, std::string_view vocab_bpe) {
  try {
    const std::string label = name.empty() ? std::string("<memory>") : name;
    if (!safetensors && safetensors_bytes)
      return make_error(Code::invalid_argument, label + ": model.safetensors is NULL with " +
                                                    std::to_string(safetensors_bytes) + " bytes");
    auto cfg = parse_config(config_json, label + "/config.json");
    if (!cfg) return cfg.status();
    const uint8_t* bytes = static_cast<const uint8_t*>(safetensors);
    auto st = SafetensorsFile::from_memory(std::vector<uint8_t>(bytes, bytes + safetensors_bytes),
                                           label + "/model.safetensors");
    if (!st) return st.status();
    auto m = build_model(*cfg, *st, label);
    if (!m) return m.status();
    m->source_dir.clear();  // no folder: the tokenizer's files come with the model
    m->encoder_json = std::string(encoder_json);
    m->vocab_bpe = std::string(vocab_bpe);
    return m;
  } catch (const std::bad_alloc&) {
    return make_error(Code::out_of_memory, name + ": out of host memory while loading the model");
  } catch (const std::exception& ex) {
    return make_error(Code::model_error, name + ": " + ex.what());
  }
}

}  // namespace rfa
