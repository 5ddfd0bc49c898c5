// The C API over the C++ runtime: handles own C++ objects; errors become codes plus a
// per-thread message. No exception or C++ type crosses this boundary.
#include "rfa/rfa.h"

#include <memory>
#include <string>
#include <vector>

#include "capi/capi_support.hpp"
#include "rfa/context.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"

using namespace rfa::capi;

namespace rfa::capi {

std::string& last_error() {
  thread_local std::string e;
  return e;
}

std::vector<DeviceInfo>& thread_devices() {
  thread_local std::vector<DeviceInfo> d;
  return d;
}

// The C options as rfa::ContextOptions; the library reads no environment (rfa/environment.h).
rfa::ContextOptions to_cpp(const rfa_context_options& c) {
  rfa::ContextOptions o;
  o.device = c.device ? c.device : "";
  o.validation = c.validation;
  o.device_profile = c.device_profile ? c.device_profile : "";
  o.memory_budget = c.memory_budget;
  o.timestamps = c.timestamps != 0;
  o.kernels.linear = c.linear_kernel ? c.linear_kernel : "";
  o.kernels.attention_direct_kv = c.attention_direct_kv;
  o.kernels.attention_lag_table = c.attention_lag_table;
  o.kernels.attention_split_k = c.attention_split_k;
  o.kernels.attention_tile = c.attention_tile;
  o.kernels.attention_f16_math = c.attention_f16_math;
  o.kernels.attention_coopmat = c.attention_coopmat;
  o.kernels.attention_tile_workgroup = c.attention_tile_workgroup;
  o.kernels.attention_fma = c.attention_fma;
  o.kernels.attention_q_registers = c.attention_q_registers;
  o.kernels.attention_pad_strides = c.attention_pad_strides;
  o.kernels.attention_f16_chunk = c.attention_f16_chunk;
  o.kernels.attention_prefetch = c.attention_prefetch;
  o.kernels.attention_raw_f16 = c.attention_raw_f16;
  o.kernels.attention_lag_e2 = c.attention_lag_e2;
  o.kernels.attention_decode_registers = c.attention_decode_registers;
  o.kernels.attention_split_cores = c.attention_split_cores;
  o.kernels.attention_coopmat_per_element = c.attention_coopmat_per_element;
  o.verify_kernels = c.verify_kernels != 0;
  o.kernel_cache = c.kernel_cache ? c.kernel_cache : "";
  o.kernels.push_descriptors = c.push_descriptors != 0;
  o.capture_pipeline_statistics = c.capture_pipeline_statistics != 0;
  o.max_storage_buffer_range = c.max_storage_buffer_range;
  o.max_storage_buffers_per_stage = c.max_storage_buffers_per_stage;
  return o;
}

}  // namespace rfa::capi

extern "C" {

const char* rfa_version(void) { return rfa::version(); }
const char* rfa_last_error(void) { return last_error().c_str(); }
const char* rfa_status_name(rfa_status s) { return rfa::code_name((rfa::Code)(int)s); }

rfa_status rfa_set_last_error(rfa_status status, const char* message) {
  last_error() = message ? message : "";
  return status;
}

rfa_status rfa_device_count(int* count) {
  if (!count) return invalid("count is NULL");
  return guarded([&] {
    auto d = rfa::list_devices();
    if (!d) return to_c(d.status());
    thread_devices() = d.take();
    *count = (int)thread_devices().size();
    return RFA_OK;
  });
}

rfa_status rfa_device_name(int index, const char** name, const char** type) {
  std::vector<rfa::DeviceInfo>& t_devices = thread_devices();
  if (t_devices.empty()) {
    int n = 0;
    if (rfa_status s = rfa_device_count(&n); s != RFA_OK) return s;
  }
  if (index < 0 || index >= (int)t_devices.size()) return invalid("device index out of range");
  if (name) *name = t_devices[(size_t)index].name.c_str();
  if (type) *type = t_devices[(size_t)index].type.c_str();
  return RFA_OK;
}

void rfa_context_options_default(rfa_context_options* o) {
  if (!o) return;
  *o = rfa_context_options{};
  const rfa::ContextOptions d;
  o->validation = d.validation;
  o->memory_budget = d.memory_budget;
  o->timestamps = d.timestamps ? 1 : 0;
  o->attention_direct_kv = d.kernels.attention_direct_kv;
  o->attention_lag_table = d.kernels.attention_lag_table;
  o->attention_split_k = d.kernels.attention_split_k;
  o->attention_tile = d.kernels.attention_tile;
  o->attention_f16_math = d.kernels.attention_f16_math;
  o->attention_coopmat = d.kernels.attention_coopmat;
  o->attention_tile_workgroup = d.kernels.attention_tile_workgroup;
  o->attention_fma = d.kernels.attention_fma;
  o->attention_q_registers = d.kernels.attention_q_registers;
  o->attention_pad_strides = d.kernels.attention_pad_strides;
  o->attention_f16_chunk = d.kernels.attention_f16_chunk;
  o->attention_prefetch = d.kernels.attention_prefetch;
  o->attention_raw_f16 = d.kernels.attention_raw_f16;
  o->attention_lag_e2 = d.kernels.attention_lag_e2;
  o->attention_decode_registers = d.kernels.attention_decode_registers;
  o->attention_split_cores = d.kernels.attention_split_cores;
  o->attention_coopmat_per_element = d.kernels.attention_coopmat_per_element;
  o->verify_kernels = d.verify_kernels ? 1 : 0;
  o->kernel_cache = nullptr;
  o->push_descriptors = d.kernels.push_descriptors ? 1 : 0;
  o->capture_pipeline_statistics = d.capture_pipeline_statistics ? 1 : 0;
  o->max_storage_buffer_range = d.max_storage_buffer_range;
  o->max_storage_buffers_per_stage = d.max_storage_buffers_per_stage;
}


rfa_status rfa_context_create_ex(const rfa_context_options* options, rfa_context** out) {
  if (!out) return invalid("out is NULL");
  *out = nullptr;
  rfa_context_options defaults;
  rfa_context_options_default(&defaults);
  const rfa_context_options& c = options ? *options : defaults;
  return guarded([&] {
    auto ctx = rfa::Context::create(to_cpp(c));
    if (!ctx) return to_c(ctx.status());
    *out = new rfa_context{ctx.take()};
    return RFA_OK;
  });
}

rfa_status rfa_context_create(const char* device, int validation, rfa_context** out) {
  rfa_context_options o;
  rfa_context_options_default(&o);
  o.device = device;
  o.validation = validation;
  return rfa_context_create_ex(&o, out);
}

rfa_status rfa_context_adopt_ex(VkInstance instance, VkPhysicalDevice physical_device, VkDevice device, VkQueue queue,
                                uint32_t queue_family, const rfa_context_options* options, rfa_context** out) {
  if (!out) return invalid("out is NULL");
  *out = nullptr;
  rfa_context_options defaults;
  rfa_context_options_default(&defaults);
  const rfa_context_options& c = options ? *options : defaults;
  return guarded([&] {
    rfa::AdoptedDevice a{instance, physical_device, device, queue, queue_family, {}};
    auto ctx = rfa::Context::adopt(a, to_cpp(c));
    if (!ctx) return to_c(ctx.status());
    *out = new rfa_context{ctx.take()};
    return RFA_OK;
  });
}

rfa_status rfa_context_adopt(VkInstance instance, VkPhysicalDevice physical_device, VkDevice device, VkQueue queue,
                             uint32_t queue_family, rfa_context** out) {
  return rfa_context_adopt_ex(instance, physical_device, device, queue, queue_family, nullptr, out);
}

void rfa_context_destroy(rfa_context* ctx) { delete ctx; }

const char* rfa_context_capabilities(const rfa_context* ctx) {
  if (!ctx) {
    invalid("ctx is NULL");
    return nullptr;
  }
  thread_local std::string summary;
  summary = ctx->ctx->capabilities_summary();
  return summary.c_str();
}

const char* rfa_context_kernel_refusals(const rfa_context* ctx) {
  if (!ctx) {
    invalid("ctx is NULL");
    return nullptr;
  }
  thread_local std::string text;
  text.clear();
  for (const std::string& r : ctx->ctx->kernel_refusals()) text += r + "\n";
  return text.c_str();
}

uint64_t rfa_context_validation_messages(const rfa_context* ctx) {
  return ctx ? ctx->ctx->validation_message_count() : 0;
}

int rfa_context_lost(const rfa_context* ctx) { return ctx && ctx->ctx->lost() ? 1 : 0; }

rfa_status rfa_model_load(const char* dir, rfa_model** out) {
  if (!out || !dir) return invalid("dir or out is NULL");
  *out = nullptr;
  return guarded([&] {
    auto m = rfa::load_model_dir(dir);
    if (!m) return to_c(m.status());
    *out = new rfa_model{m.take()};
    (*out)->info = rfa::model_info(*(*out)->model);
    return RFA_OK;
  });
}

rfa_status rfa_model_load_memory(const rfa_model_files* files, rfa_model** out) {
  if (!out || !files) return invalid("files or out is NULL");
  *out = nullptr;
  if ((!files->config_json && files->config_json_length) || (!files->encoder_json && files->encoder_json_length) ||
      (!files->vocab_bpe && files->vocab_bpe_length))
    return invalid("rfa_model_files: a NULL pointer with a non-zero length");
  return guarded([&] {
    rfa::ModelFiles f;
    if (files->name) f.name = files->name;
    f.config_json = std::string_view(files->config_json ? files->config_json : "", files->config_json_length);
    f.safetensors = files->safetensors;
    f.safetensors_bytes = files->safetensors_length;
    f.encoder_json = std::string_view(files->encoder_json ? files->encoder_json : "", files->encoder_json_length);
    f.vocab_bpe = std::string_view(files->vocab_bpe ? files->vocab_bpe : "", files->vocab_bpe_length);
    auto m = rfa::load_model_memory(f);
    if (!m) return to_c(m.status());
    *out = new rfa_model{m.take()};
    (*out)->info = rfa::model_info(*(*out)->model);
    return RFA_OK;
  });
}

void rfa_model_destroy(rfa_model* model) { delete model; }

rfa_status rfa_model_info(const rfa_model* model, int* layers, int* heads, int* head_dim, int* input_dim,
                          int* output_dim, int* vocab) {
  if (!model) return invalid("model is NULL");
  rfa::ModelInfo i = rfa::model_info(*model->model);
  if (layers) *layers = i.layers;
  if (heads) *heads = i.heads;
  if (head_dim) *head_dim = i.head_dim;
  if (input_dim) *input_dim = i.input_dim;
  if (output_dim) *output_dim = i.output_dim;
  if (vocab) *vocab = i.vocab;
  return RFA_OK;
}

rfa_status rfa_model_head(const rfa_model* model, int layer, int head, rfa_head_info* out) {
  if (!model || !out) return invalid("model or out is NULL");
  return guarded([&] {
    for (const rfa::HeadSummary& h : rfa::head_summaries(*model->model)) {
      if (h.layer != layer || h.head != head) continue;
      const rfa::HeadParams& p = h.params;
      *out = {p.mu, p.sigma2, p.s2t, p.eta2, p.gamma2, p.nu, p.kappa, p.tau, p.lag_shift, h.omega_min, h.omega_max,
              h.regime.stationary_variance, h.regime.alpha, h.regime.beta, (int)h.regime.regime};
      return RFA_OK;
    }
    return invalid("layer or head out of range");
  });
}

rfa_status rfa_session_create(rfa_context* ctx, const rfa_model* model, int batch, int max_context,
                              rfa_session** out) {
  if (!ctx || !model || !out) return invalid("ctx, model or out is NULL");
  *out = nullptr;
  return guarded([&] {
    rfa::SessionOptions o;
    o.batch = batch;
    o.max_context = max_context;
    auto s = rfa::Session::create(*ctx->ctx, model->model, o);
    if (!s) return to_c(s.status());
    *out = new rfa_session{s.take()};
    return RFA_OK;
  });
}

void rfa_session_options_default(rfa_session_options* o) {
  if (!o) return;
  const rfa::SessionOptions d;
  *o = {d.batch, d.max_context, d.window, d.last_output_only ? 1 : 0, d.profile ? 1 : 0, (int)d.kv};
}

rfa_status rfa_session_create_ex(rfa_context* ctx, const rfa_model* model, const rfa_session_options* options,
                                 rfa_session** out) {
  if (!ctx || !model || !options || !out) return invalid("ctx, model, options or out is NULL");
  *out = nullptr;
  return guarded([&] {
    rfa::SessionOptions o;
    o.batch = options->batch;
    o.max_context = options->max_context;
    o.window = options->window;
    o.last_output_only = options->last_output_only != 0;
    o.profile = options->profile != 0;
    if (options->kv != RFA_KV_F32 && options->kv != RFA_KV_F16)
      return invalid("options->kv is " + std::to_string(options->kv) + " (RFA_KV_F32 = 0 or RFA_KV_F16 = 1)");
    o.kv = options->kv == RFA_KV_F16 ? rfa::KvPrecision::f16 : rfa::KvPrecision::f32;
    auto s = rfa::Session::create(*ctx->ctx, model->model, o);
    if (!s) return to_c(s.status());
    *out = new rfa_session{s.take()};
    return RFA_OK;
  });
}

int rfa_session_oldest_position(const rfa_session* s) { return s ? s->session->oldest_position() : 0; }
int rfa_session_window(const rfa_session* s) { return s ? s->session->window() : 0; }
int rfa_session_first_full_row(const rfa_session* s) { return s ? rfa::Inspector(*s->session).first_full_row() : 0; }

rfa_status rfa_session_window_report(rfa_session* s, int b, int measure, rfa_window_truncation* out, int capacity,
                                     int* count) {
  if (!s || !count || (capacity > 0 && !out)) return invalid("session, count or out is NULL");
  return guarded([&] {
    auto r = rfa::Inspector(*s->session).window_report(b, measure != 0);
    if (!r) return to_c(r.status());
    if ((int)r->size() > capacity)
      return to_c(rfa::Status(rfa::Code::invalid_argument, "window report: " + std::to_string(r->size()) +
                                                               " entries, capacity " + std::to_string(capacity)));
    for (size_t k = 0; k < r->size(); ++k) {
      const rfa::WindowTruncation& w = (*r)[k];
      out[k] = {w.layer, w.head, w.edge_lag, w.decay_bound, w.precision_ratio, w.edge_mass};
    }
    *count = (int)r->size();
    return RFA_OK;
  });
}

rfa_status rfa_session_get_stats(const rfa_session* s, rfa_session_stats* out) {
  if (!s || !out) return invalid("session or out is NULL");
  const rfa::SessionStats st = s->session->stats();
  *out = {st.submits, st.bytes_up, st.bytes_down, st.plans_recorded};
  return RFA_OK;
}

void rfa_session_destroy(rfa_session* s) { delete s; }

static std::vector<double> copy_ts(const rfa_session* s, const double* ts, int n) {
  if (!ts) return {};
  return std::vector<double>(ts, ts + (size_t)s->session->batch() * n);
}

rfa_status rfa_session_prefill_tokens(rfa_session* s, const int64_t* ids, int n, const double* timestamps) {
  if (!s || !ids || n <= 0) return invalid("session, ids or n");
  return guarded([&] {
    std::vector<int64_t> v(ids, ids + (size_t)s->session->batch() * n);
    return to_c(s->session->prefill_tokens(v, n, copy_ts(s, timestamps, n)));
  });
}

rfa_status rfa_session_prefill_values(rfa_session* s, const float* values, int n, const double* timestamps) {
  if (!s || !values || n <= 0) return invalid("session, values or n");
  return guarded([&] {
    rfa::ModelInfo i = rfa::model_info(s->session->model());
    std::vector<float> v(values, values + (size_t)s->session->batch() * n * i.input_dim);
    return to_c(s->session->prefill_values(v, n, copy_ts(s, timestamps, n)));
  });
}

rfa_status rfa_session_reset(rfa_session* s) {
  if (!s) return invalid("session is NULL");
  s->session->reset();
  return RFA_OK;
}

int rfa_session_position(const rfa_session* s) { return s ? s->session->position() : 0; }

rfa_status rfa_session_outputs(const rfa_session* s, float* out, size_t capacity, int* count, size_t* floats) {
  if (!s) return invalid("session is NULL");
  const auto& o = s->session->outputs();
  if (count) *count = s->session->last_count();
  if (floats) *floats = o.size();
  if (out) {
    if (capacity < o.size()) return invalid("output capacity too small");
    std::copy(o.begin(), o.end(), out);
  }
  return RFA_OK;
}

rfa_status rfa_session_attention(rfa_session* s, int layer, int head, int b, int r0, int r1, int c0, int c1,
                                 int decayed, float* out) {
  if (!s || !out) return invalid("session or out is NULL");
  return guarded([&] {
    auto a = rfa::Inspector(*s->session).attention(layer, head, b, r0, r1, c0, c1, decayed != 0);
    if (!a) return to_c(a.status());
    std::copy(a->begin(), a->end(), out);
    return RFA_OK;
  });
}

rfa_status rfa_session_curves(rfa_session* s, int layer, int head, const double* lags, int n, double* decay,
                              double* vcov, double* precision, double* bias) {
  if (!s || !lags || n <= 0) return invalid("session, lags or n");
  return guarded([&] {
    auto c = rfa::Inspector(*s->session).curves(layer, head, std::vector<double>(lags, lags + n));
    if (!c) return to_c(c.status());
    if (decay) std::copy(c->decay.begin(), c->decay.end(), decay);
    if (vcov) std::copy(c->vcov.begin(), c->vcov.end(), vcov);
    if (precision) std::copy(c->precision.begin(), c->precision.end(), precision);
    if (bias) std::copy(c->bias.begin(), c->bias.end(), bias);
    return RFA_OK;
  });
}

}  // extern "C"

// For the C API's other files (capi/capi_internal.hpp).
namespace rfa::capi {
rfa::Session* session_of(rfa_session* s) { return s ? s->session.get() : nullptr; }
rfa_status report(const rfa::Status& s) { return to_c(s); }
rfa_status report_invalid(const char* what) { return invalid(what); }
}  // namespace rfa::capi
