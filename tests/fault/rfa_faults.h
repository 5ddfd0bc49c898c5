/* Fault injection for the C API's and Python's tests (issue 33): the C face of vk_faults.hpp, in
 * the test-only library librfa_faults (librfa's objects plus this; never installed). A test
 * counts the Vulkan call sites of what it runs, then arms one site to return an error.
 * Functions returning int give 0 on success (else a message through rfa_last_error()). */
#ifndef RFA_FAULTS_H
#define RFA_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "rfa/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads the Vulkan loader's functions and wraps them (idempotent). */
RFA_API int rfa_faults_install(void);
/* Forgets the counts and disarms. */
RFA_API void rfa_faults_reset(void);
RFA_API uint64_t rfa_faults_calls(void);
/* Takes a snapshot of the sites called since the last reset, in the order of their first call,
 * and returns their number; the calls below index that snapshot. */
RFA_API size_t rfa_faults_snapshot(void);
/* Site i: its function's name ("vkQueueSubmit"), calls since the reset, the VkResult errors the
 * function can return (up to `capacity` into `errors`, their number into *n_errors). */
RFA_API int rfa_faults_site(size_t i, const char** function, uint64_t* calls, int32_t* errors, size_t capacity,
                            size_t* n_errors);
/* "vkQueueSubmit from rfa::gpu::Recorder::submit recorder.cpp:378" (where a symbolizer is linked). */
RFA_API const char* rfa_faults_site_description(size_t i);
/* The `occurrence`-th call (1 = the next) from site i returns `result`. */
RFA_API int rfa_faults_arm_site(size_t i, uint64_t occurrence, int32_t result);
/* The `nth` call (1 = the next) of `function` from anywhere returns `result`. */
RFA_API int rfa_faults_arm_call(const char* function, uint64_t nth, int32_t result);
RFA_API void rfa_faults_disarm(void);
/* 1 when the armed fault was injected. */
RFA_API int rfa_faults_fired(void);
/* "VK_ERROR_DEVICE_LOST". */
RFA_API const char* rfa_faults_result_name(int32_t result);
/* The rfa_status a runtime call must return for `result` (RFA_ERROR_OUT_OF_MEMORY, ...). */
RFA_API int rfa_faults_expected_status(int32_t result);

#ifdef __cplusplus
}
#endif
#endif /* RFA_FAULTS_H */
