// The C API, model side: description strings and the tokenizer (the CPU twin's
// rfa_model_reference_forward lives in librfa_reference: runtime/src/reference/reference_capi.cpp).
#include <algorithm>
#include <string>
#include <vector>

#include "capi/capi_support.hpp"
#include "rfa/rfa.h"

using namespace rfa::capi;

namespace {

// The model's tokenizer, loaded on first use; null with the error set when it cannot be.
rfa::Tokenizer* tokenizer_of(const rfa_model* m, rfa_status* st) {
  std::lock_guard<std::mutex> lock(m->tokenizer_mutex);
  if (!m->tokenizer) {
    auto t = rfa::load_tokenizer(*m->model);
    if (!t) {
      *st = to_c(t.status());
      return nullptr;
    }
    m->tokenizer = t.take();
  }
  return m->tokenizer.get();
}

}  // namespace

extern "C" {

const char* rfa_model_architecture(const rfa_model* model) { return model ? model->info.architecture.c_str() : ""; }
const char* rfa_model_name(const rfa_model* model) { return model ? model->info.name.c_str() : ""; }
const char* rfa_model_tokenizer(const rfa_model* model) {
  return model && model->info.architecture == "lm" ? model->info.tokenizer.c_str() : "";
}

rfa_status rfa_model_dims(const rfa_model* model, int* d_e, int* hidden, int* t_equal) {
  if (!model) return invalid("model is NULL");
  if (d_e) *d_e = model->info.d_e;
  if (hidden) *hidden = model->info.hidden;
  if (t_equal) *t_equal = model->info.t_equal ? 1 : 0;
  return RFA_OK;
}

rfa_status rfa_model_attention_window(const rfa_model* model, int* window) {
  if (!model || !window) return invalid("model or window is NULL");
  *window = model->info.attention_window;
  return RFA_OK;
}

rfa_status rfa_model_encode(const rfa_model* model, const char* text, size_t length, int64_t* ids, size_t capacity,
                            size_t* count) {
  if (!model || (!text && length) || !count) return invalid("model, text or count is NULL");
  return guarded([&] {
    rfa_status st = RFA_OK;
    rfa::Tokenizer* tok = tokenizer_of(model, &st);
    if (!tok) return st;
    const std::vector<int> v = tok->encode(std::string_view(text ? text : "", length));
    *count = v.size();
    if (!ids) return RFA_OK;
    if (capacity < v.size())
      return invalid("ids capacity " + std::to_string(capacity) + " is smaller than the " + std::to_string(v.size()) +
                     " tokens");
    std::copy(v.begin(), v.end(), ids);
    return RFA_OK;
  });
}

rfa_status rfa_model_decode(const rfa_model* model, const int64_t* ids, size_t n, char* out, size_t capacity,
                            size_t* length) {
  if (!model || (!ids && n) || !length) return invalid("model, ids or length is NULL");
  return guarded([&] {
    rfa_status st = RFA_OK;
    rfa::Tokenizer* tok = tokenizer_of(model, &st);
    if (!tok) return st;
    std::vector<int> v;
    v.reserve(n);
    // Ids beyond int range are outside any vocabulary: skipped like every other unknown id.
    for (size_t i = 0; i < n; ++i) v.push_back(ids[i] < 0 || ids[i] > INT32_MAX ? -1 : (int)ids[i]);
    const std::string s = tok->decode(v);
    *length = s.size();
    if (!out) return RFA_OK;
    if (capacity < s.size())
      return invalid("out capacity " + std::to_string(capacity) + " is smaller than the " + std::to_string(s.size()) +
                     " bytes");
    std::copy(s.begin(), s.end(), out);
    return RFA_OK;
  });
}

}  // extern "C"
