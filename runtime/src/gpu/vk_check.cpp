#include "gpu/vk_check.hpp"

#include <cstring>

namespace rfa::gpu {

const char* vk_result_name(VkResult r) {
  switch (r) {
#define RFA_VK_CASE(x) \
  case x:              \
    return #x;
    RFA_VK_CASE(VK_SUCCESS)
    RFA_VK_CASE(VK_NOT_READY)
    RFA_VK_CASE(VK_TIMEOUT)
    RFA_VK_CASE(VK_INCOMPLETE)
    RFA_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    RFA_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    RFA_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    RFA_VK_CASE(VK_ERROR_DEVICE_LOST)
    RFA_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    RFA_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    RFA_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    RFA_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    RFA_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    RFA_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    RFA_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    RFA_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
    RFA_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    RFA_VK_CASE(VK_ERROR_UNKNOWN)
    RFA_VK_CASE(VK_ERROR_FRAGMENTATION)
    RFA_VK_CASE(VK_ERROR_INVALID_SHADER_NV)
#undef RFA_VK_CASE
    default:
      return "VK_ERROR_(unlisted)";
  }
}

Status vk_status(VkResult r, const char* expr, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  std::string where = std::string(base ? base + 1 : file) + ":" + std::to_string(line);
  std::string msg = std::string(expr) + " failed with " + vk_result_name(r) + " (" + where + ")";
  switch (r) {
    case VK_ERROR_DEVICE_LOST:
      return Status(Code::device_lost, msg + "; the Vulkan device was lost, the context refuses further work");
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return Status(Code::out_of_memory, msg);
    default:
      return Status(Code::device_error, msg);
  }
}

Status vk_wait_status(VkResult r, const char* expr, const char* file, int line) {
  Status s = vk_status(r, expr, file, line);
  if (s.code() == Code::device_lost) return s;
  // The runtime waits without a time limit: a wait that returns anything but success leaves the
  // work's state unknown (a hung GPU, a driver out of memory). It is handled as a lost device.
  return Status(Code::device_lost, s.message() + "; a wait without a time limit failed, so the device is treated as "
                                                  "lost and the context refuses further work");
}

}  // namespace rfa::gpu
