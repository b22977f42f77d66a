// The report's destination (see Output.h).
#include "cli/Output.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "model/Errors.h"

namespace layergate::driver {

ReportOut::ReportOut(const std::string& path) : path_(path) {
  if (path_.empty()) return;
  file_.open(path_, std::ios::binary | std::ios::trunc);
  if (!file_) throw InputError(path_ + ": cannot write the report: " + std::strerror(errno));
}

std::ostream& ReportOut::stream() { return path_.empty() ? std::cout : file_; }

void ReportOut::finish() {
  stream().flush();
  if (path_.empty()) return;
  file_.close();
  if (!file_) throw InputError(path_ + ": cannot write the report: " + std::strerror(errno));
}

report::HtmlOptions htmlOptions(const std::string& output, const std::string& base, const std::string& title) {
  namespace fs = std::filesystem;
  fs::path page = output.empty() ? fs::current_path() : fs::absolute(output).parent_path();
  return {"layergate report: " + title, fs::absolute(base).lexically_normal().string(), page.lexically_normal().string()};
}

}  // namespace layergate::driver
