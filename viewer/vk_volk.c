/* The viewer's own volk (Debian's libvulkan-volk-dev: volk.c next to volk.h, never copied here),
 * under the names of the generated viewer_volk_names.h (viewer_vkCreateInstance, ...): apart from
 * librfa's copy (rfa_vk...), and leaving the plain names vkCreateBuffer, ... to the forwarders that
 * ImGui's prebuilt Vulkan backend calls (viewer/CMakeLists.txt). */
#include "viewer_volk_names.h"

#include <volk.c>
