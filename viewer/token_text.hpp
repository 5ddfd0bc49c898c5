// Text models in the viewer: printable labels of tokens (bytes or BPE pieces) along the attention
// map's axes when it is zoomed in far enough to read them, and the streamed text with the hovered
// query and key tokens highlighted.
#pragma once

#include <string>
#include <vector>

#include "imgui.h"
#include "rfa/heatmap.hpp"

namespace rfa { class Tokenizer; }

namespace viewer {

// Highlight colours of the hovered query (row i) and key (column j) tokens in the text panel
// (opaque, so a screenshot shows them exactly).
constexpr ImU32 kQueryHighlight = IM_COL32(200, 90, 40, 255);
constexpr ImU32 kKeyHighlight = IM_COL32(40, 150, 200, 255);

// A token as one line of printable ASCII (the viewer's font has no other glyphs): its bytes, with
// a space shown as '_', \n \t \r escaped, and any other byte as \xNN. Without a tokenizer: "#id".
std::string token_label(rfa::Tokenizer* tok, int id);

// Room the labels take: left of the map (row labels) and above it (column labels), in pixels.
constexpr float kRowLabelWidth = 64.0f;
constexpr float kColLabelHeight = 16.0f;

// What draw_axis_labels drew (the viewer's --dump-json reports it).
struct AxisLabels {
  int r0 = 0, c0 = 0;  // position of the first label of each list
  std::vector<std::string> rows, cols;
};

// Labels of the view's rows (queries) left of the map [p0, p0 + side] and of its columns (keys)
// above it, for the positions already streamed (< filled); labels[k] is the label of position
// base + k. Columns are labelled when a cell is as wide as a character, each label cut to its
// cell. Rows are labelled when a cell is at least a third of a line tall: one row per line when it
// is a line tall, else in staggered columns side by side (every second row one column further
// left, or every third, ...), so that the labels of one column are a line apart and never overlap;
// each label is cut to its column's width (at least two characters, else no row labels).
AxisLabels draw_axis_labels(ImDrawList* dl, ImVec2 p0, float side, const rfa::HeatmapRequest& view, int filled,
                            const std::vector<std::string>& labels, int base = 0);

// The streamed text, wrapped to the window, token by token (pieces[k] is position base + k): the
// query token (position `query`) and the key token (`key`) on their highlight colours (-1: none).
// Returns the position of a token that was clicked this frame, or -1.
int draw_token_text(const std::vector<std::string>& pieces, int base, int query, int key);

}  // namespace viewer
