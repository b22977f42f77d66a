// The report's destination (see Output.h).
#include "cli/Output.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "model/Errors.h"
#include "selftest/Process.h"

namespace layergate::driver {

namespace fs = std::filesystem;

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

std::string commandLine(int argc, const char* const* argv) {
  std::string out = "layergate";
  for (int i = 1; i < argc; ++i) {
    std::string w = argv[i];
    bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                   "0123456789-_=./,:+@%") == std::string::npos;
    std::string q = "'";
    for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += " " + (plain ? w : q + "'");
  }
  return out;
}

Checkout checkoutOf(const std::string& dir) {
  std::error_code ec;
  fs::path abs = fs::absolute(dir.empty() ? "." : dir, ec).lexically_normal();
  if (abs.has_filename() == false && abs.has_parent_path()) abs = abs.parent_path();
  Checkout c{abs.filename().string(), ""};
  if (c.name.empty()) c.name = abs.string();
  // git, when there is one: a missing git, a folder outside any checkout,
  // a checkout without commits all leave the folder's name.
  auto r = selftest::runChild({"git", "-C", abs.string(), "rev-parse", "--show-toplevel", "HEAD"}, 10.0);
  if (!r.started || r.exit_code != 0) return c;
  std::istringstream lines(r.output);
  std::string top, head;
  std::getline(lines, top);
  std::getline(lines, head);
  bool hex = head.size() == 40 && head.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex || top.empty() || top[0] != '/') return c;
  c.name = fs::path(top).filename().string();
  c.commit = head;
  return c;
}

report::HtmlOptions htmlOptions(const std::string& output, const std::string& base, const std::string& checked,
                                const std::string& command) {
  fs::path page = output.empty() ? fs::current_path() : fs::absolute(output).parent_path();
  report::HtmlOptions o;
  Checkout c = checkoutOf(checked);
  o.title = "layergate report: " + c.name;
  o.checkout = c.name;
  o.checked = checked;
  o.commit = c.commit;
  o.command = command;
  // The date of the run, in UTC; SOURCE_DATE_EPOCH (reproducible builds)
  // replaces it.
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
    char* end = nullptr;
    long long v = std::strtoll(epoch, &end, 10);
    if (end && *end == '\0' && end != epoch) now = static_cast<std::time_t>(v);
  }
  std::tm utc{};
  char date[32] = "";
  if (gmtime_r(&now, &utc)) std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &utc);
  o.date = date;
  o.file_base = fs::absolute(base).lexically_normal().string();
  o.page_dir = page.lexically_normal().string();
  return o;
}

}  // namespace layergate::driver
