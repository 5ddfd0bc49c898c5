// The model rfa-viewer opens when no --model is given.
#pragma once

#include <string>

namespace viewer {

// RFA_MODEL when set; else the zoo's spiral-filter beside the program: bin/../share/rfa/models in an
// install or an unpacked package (rfa-viewer.exe started from the zip's bin\), models/ of the
// sources for a build folder inside them (build/viewer/); else "" (the window's model path field).
std::string default_model(const char* argv0);

}  // namespace viewer
