// What the C API's files share beyond rfa.h: the session behind a handle and the per-thread error
// message (both owned by rfa_c.cpp).
#pragma once

#include "rfa/rfa.h"
#include "rfa/session.hpp"

namespace rfa::capi {

rfa::Session* session_of(rfa_session* s);
// Records the status' message for rfa_last_error() and returns its code (RFA_OK for ok).
rfa_status report(const rfa::Status& s);
rfa_status report_invalid(const char* what);

}  // namespace rfa::capi
