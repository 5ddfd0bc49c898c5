// The C face of the CPU twin: rfa.h's rfa_model_reference_forward, in librfa_reference. It reaches
// librfa through its public API only (the model behind the handle; rfa_set_last_error for the
// message rfa_last_error() gives), so librfa_reference.so links against librfa.so's exports.
#include <algorithm>
#include <exception>
#include <new>
#include <string>

#include "capi/capi_support.hpp"  // struct rfa_model: the handle's layout (its helpers are librfa's own)
#include "rfa/reference.hpp"
#include "rfa/rfa.h"

extern "C" {

rfa_status rfa_model_reference_forward(const rfa_model* model, int batch, int n, const double* values,
                                       const int64_t* ids, const double* timestamps, double* out) {
  if (!model || !out) return rfa_set_last_error(RFA_ERROR_INVALID_ARGUMENT, "invalid_argument: model or out is NULL");
  try {
    auto r = rfa::reference_forward(*model->model, batch, n, values, ids, timestamps);
    if (!r) return rfa_set_last_error((rfa_status)(int)r.status().code(), r.status().to_string().c_str());
    std::copy(r->begin(), r->end(), out);
    return RFA_OK;
  } catch (const std::bad_alloc&) {
    return rfa_set_last_error(RFA_ERROR_OUT_OF_MEMORY, "out_of_memory: host allocation failed");
  } catch (const std::exception& e) {
    return rfa_set_last_error(RFA_ERROR_DEVICE, (std::string("internal error: ") + e.what()).c_str());
  }
}

}  // extern "C"
