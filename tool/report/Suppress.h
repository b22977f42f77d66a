// Inline suppressions: `# layergate: ignore[LG001, LG008] reason` in Python,
// `// layergate: ignore[LG001]` (or /* ... */) in C++, on the line a finding
// points at (its primary location, the line every format prints; a gap's
// admitting line is taken too). Only real comments count: the comments come
// from each frontend's lexer (model/Source.h).
//
// Takes: the findings and the files' comments. Marks the findings a directive
// covers (they stay in JSON and SARIF, marked, and stop counting), and adds
// LG010 for each blanket `layergate: ignore` (no codes: it silences every
// rule) and LG011 for a directive, or a code in one, that matched nothing.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/Model.h"
#include "model/Source.h"

namespace layergate::report {

struct Directive {
  model::Location where;           // the comment
  bool blanket = false;            // no [codes]
  std::vector<std::string> codes;  // upper-cased, as written
  std::string justification;       // the text after the codes
  std::string malformed;           // why it is not a valid directive ("" when it is)
};

// The directive in a comment's text, nullopt when it has none. A directive
// starts the comment or follows a '#' or '//' inside it
// (`# type: ignore  # layergate: ignore[LG001]`).
std::optional<Directive> parseDirective(const model::Comment& c, const std::string& file);

// `enabled`: whether a rule runs here; a code of a rule that does not run is
// not reported as unused (it could not have matched).
void applySuppressions(std::vector<model::Finding>& findings, const std::map<std::string, model::SourceText>& files,
                       const std::function<bool(const std::string&)>& enabled);

}  // namespace layergate::report
