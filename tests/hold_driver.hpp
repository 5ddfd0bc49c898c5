// LeakSanitizer names a leak by the module of the code that allocated it, after the program ends.
// The Vulkan loader unloads the driver and the layers with the last instance (and each new
// instance loads them again, at another address), so what they still hold then reads as a leak
// of "<unknown module>" that no suppression can name. Held loaded for the life of the test
// process, they free or keep their memory as a loaded library does and nothing is reported: the
// sanitizer build's GPU tests run with leak checking and no suppression (scripts/test-sanitizers.sh).
#pragma once

#if !defined(_WIN32)
#include <dlfcn.h>
#endif

namespace rfa::test {

inline void hold_vulkan_driver_loaded() {
#if !defined(_WIN32)
  // lavapipe and the validation layer, by the names their manifests give (absent ones: no-ops).
  for (const char* lib : {"libvulkan_lvp.so", "libVkLayer_khronos_validation.so"}) dlopen(lib, RTLD_NOW | RTLD_NODELETE);
#endif
}

}  // namespace rfa::test
