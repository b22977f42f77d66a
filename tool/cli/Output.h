// Where a check's report goes: stdout, or --output FILE. The file is opened
// before the analysis runs, so that an unwritable path is exit 2 (InputError)
// at once rather than after the solver's work.
#pragma once

#include <fstream>
#include <ostream>
#include <string>

#include "report/Report.h"

namespace layergate::driver {

class ReportOut {
 public:
  explicit ReportOut(const std::string& path);  // "" = stdout; throws InputError
  std::ostream& stream();
  void finish();  // flush and close; throws InputError when the write failed

 private:
  std::string path_;
  std::ofstream file_;
};

// Options for an HTML page written to `output` ("" = stdout: the working
// directory) whose results' paths are relative to `base`.
report::HtmlOptions htmlOptions(const std::string& output, const std::string& base, const std::string& title);

}  // namespace layergate::driver
