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

// The checkout a folder is in: the name of its git checkout's top folder and
// the commit checked out (git rev-parse; "" when git is missing or the folder
// is not in a checkout), else the folder's own name.
struct Checkout {
  std::string name, commit;
};
Checkout checkoutOf(const std::string& dir);

// The command line as a shell would take it again ("layergate check 'a b'"),
// for the HTML page.
std::string commandLine(int argc, const char* const* argv);

// Options for an HTML page written to `output` ("" = stdout: the working
// directory) whose results' paths are relative to `base`: its title names the
// checkout of `checked` (the folder checked) and its commit, the date and the
// command line.
report::HtmlOptions htmlOptions(const std::string& output, const std::string& base, const std::string& checked,
                                const std::string& command);

}  // namespace layergate::driver
