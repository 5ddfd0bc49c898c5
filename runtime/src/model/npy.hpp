// NumPy .npy reading and writing: the declarations are public (rfa/npy.hpp); internal code keeps
// including this path.
#pragma once

#include "rfa/npy.hpp"
