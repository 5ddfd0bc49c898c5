// The viewer's Vulkan: volk's function pointers under the viewer's own names (viewer/vk_volk.c),
// loaded at run time by vk_device.cpp; every viewer file that calls Vulkan includes this.
#pragma once

#include "viewer_volk_names.h"

#include <volk.h>
