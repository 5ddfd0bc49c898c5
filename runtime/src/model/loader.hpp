// Model folder -> rfa::Model: config.json + model.safetensors, validated tensor by tensor, raw
// reference parameters converted to the physical AttentionParams (model/physics.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/config.hpp"
#include "model/model.hpp"
#include "model/safetensors.hpp"
#include "rfa/status.hpp"

namespace rfa {

// Loads `dir`/config.json and `dir`/model.safetensors. Every expected tensor must be present with
// the exact shape the config implies; unexpected tensors are rejected (the reference's derived
// buffers t_measure, abs_idx, causal_mask are ignored); NaN/Inf in a used weight is rejected.
Result<Model> load_model(const std::string& dir);

// The same from an already parsed config and an opened safetensors file.
Result<Model> build_model(const ModelConfig& cfg, const SafetensorsFile& st, const std::string& dir);

// The same from the files' contents in memory (rfa::ModelFiles, rfa/session.hpp); `name` stands
// for the folder in messages and in ModelInfo::name.
Result<Model> load_model_files(const std::string& name, std::string_view config_json, const void* safetensors,
                                size_t safetensors_bytes, std::string_view encoder_json, std::string_view vocab_bpe);


}  // namespace rfa
