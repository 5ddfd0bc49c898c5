/* volk (Debian's libvulkan-volk-dev: volk.c next to volk.h, found by cmake/Vulkan.cmake), compiled
 * into the runtime under the names of the generated rfa_volk_names.h (rfa_vkCreateInstance, ...),
 * so that an app or test linking libvulkan, or its own volk, next to librfa.a meets no duplicate. */
#include "rfa_volk_names.h"

#include <volk.c>
