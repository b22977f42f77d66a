#include "selftest/PlanFile.h"

#include <algorithm>
#include <fstream>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/Errors.h"

namespace layergate::selftest {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat2 = "layergate-selftest-plan/2";
// Where the folder goes in a saved harness source; the GPU side puts the
// folder's absolute path there.
constexpr const char* kFolderToken = "@LAYERGATE_PLAN_FOLDER@/";
// A folder of a plan holds this file: only such a folder is replaced by the next save.
constexpr const char* kMarker = ".layergate-plan-folder";
// A header larger than this is not copied; the plan names it instead.
constexpr std::uintmax_t kMaxHeaderBytes = 8u << 20;
constexpr std::size_t kMaxHeaders = 2000;

std::string normal(const fs::path& p) { return fs::absolute(p).lexically_normal().string(); }

bool under(const fs::path& dir, const fs::path& file) {
  const std::string rel = file.lexically_relative(dir).string();
  return !rel.empty() && rel != "." && rel.rfind("..", 0) != 0;
}

fs::path commonDir(const fs::path& a, const fs::path& b) {
  fs::path out;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end() && *i == *j; ++i, ++j) out /= *i;
  return out;
}

struct Carried {
  std::vector<std::string> files;        // absolute, in the order found
  std::map<std::string, std::string> left_behind;  // absolute -> why
};

// The header set of one harness and every file they include that is found
// beside the including file or under an include directory: what nvcc reads
// besides system and CUDA headers (a name found nowhere gets a stand-in).
Carried closure(const Plan& p) {
  Carried c;
  std::set<std::string> seen;
  std::vector<std::string> work;
  // The checkout's files only: a system or CUDA header is nvcc's own.
  const fs::path project = p.harness_root.empty() ? fs::path(normal(p.header)).parent_path() : fs::path(normal(p.harness_root));
  auto add = [&](const fs::path& f) {
    const std::string key = normal(f);
    if (!under(project, key) || !seen.insert(key).second) return;
    c.files.push_back(key);
    if (c.files.size() > kMaxHeaders) c.left_behind[key] = "beyond the first 2000 headers";
    else work.push_back(key);
  };
  add(p.header);
  for (const auto& f : p.harness_files) add(f);
  static const std::regex inc("^\\s*#\\s*include\\s*[<\"]([^>\"]+)[>\"]");
  while (!work.empty()) {
    const std::string file = work.back();
    work.pop_back();
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (ec || size > kMaxHeaderBytes) {
      c.left_behind[file] = ec ? "cannot be read: " + ec.message() : "larger than 8 MiB";
      continue;
    }
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, inc)) continue;
      const std::string name = m[1].str();
      if (fs::path(name).is_absolute()) continue;
      if (fs::is_regular_file(fs::path(file).parent_path() / name)) {
        add(fs::path(file).parent_path() / name);
        continue;
      }
      for (const auto& d : p.harness_include_dirs)
        if (fs::is_regular_file(fs::path(d) / name)) {
          add(fs::path(d) / name);
          break;
        }
    }
  }
  return c;
}

// Every occurrence of the path as a whole (in an #include "..." or the
// comment naming the header) becomes the folder token and its relative path.
std::string relocate(std::string text, const std::string& abs, const std::string& rel) {
  for (std::size_t at = text.find(abs); at != std::string::npos; at = text.find(abs, at)) {
    const std::size_t end = at + abs.size();
    const bool whole = (at == 0 || text[at - 1] == '"' || text[at - 1] == ' ') &&
                       (end == text.size() || text[end] == '"' || text[end] == '\n');
    if (!whole) {
      at = end;
      continue;
    }
    const std::string to = std::string(kFolderToken) + rel;
    text.replace(at, abs.size(), to);
    at += to.size();
  }
  return text;
}

// A path a plan made elsewhere names inside its folder: relative, never out of it.
std::string insideFolder(const json& v, const std::string& what) {
  if (!v.is_string()) throw std::runtime_error(what + ": expected a path");
  const std::string s = v.get<std::string>();
  const fs::path p(s);
  bool up = false;
  for (const auto& part : p) up |= part == "..";
  if (s.empty() || p.is_absolute() || up) throw std::runtime_error(what + ": not a path inside the plan's folder: " + s);
  return s;
}

}  // namespace

std::string planFolderName(const std::string& plan_path) {
  const fs::path name = fs::path(plan_path).filename();
  fs::path folder = name;
  folder.replace_extension(".d");
  if (folder == name) folder = name.string() + ".d";
  return folder.string();
}

std::string savePlan(const std::vector<Plan>& gates, const std::string& path) {
  // What each harness reads, and the directory they all sit below.
  std::vector<Carried> carried(gates.size());
  std::optional<fs::path> root;
  auto widen = [&](const fs::path& dir) { root = root ? commonDir(*root, dir) : dir; };
  for (std::size_t g = 0; g < gates.size(); ++g) {
    if (gates[g].header.empty() || !gates[g].harness_error.empty()) continue;
    carried[g] = closure(gates[g]);
    if (carried[g].files.empty()) throw InputError(gates[g].header + ": the harness's header is not readable");
    for (const auto& f : carried[g].files) widen(fs::path(f).parent_path());
    for (const auto& d : gates[g].harness_include_dirs)
      for (const auto& f : carried[g].files)
        if (under(normal(d), f)) {
          widen(normal(d));
          break;
        }
  }
  const fs::path plan_dir = fs::path(path).parent_path();
  const std::string folder_name = planFolderName(path);
  const fs::path folder = plan_dir / folder_name;
  std::error_code ec;
  if (!plan_dir.empty() && !fs::is_directory(plan_dir, ec))
    throw InputError(path + ": cannot write the plan: " + plan_dir.string() + " is not a directory");
  if (fs::exists(folder, ec)) {
    if (!fs::is_directory(folder) || !fs::exists(folder / kMarker))
      throw InputError(folder.string() + ": exists and is not a plan's folder (the plan's headers go there): "
                                         "remove it or save the plan under another name");
    fs::remove_all(folder, ec);
    if (ec) throw InputError(folder.string() + ": cannot replace the plan's folder: " + ec.message());
  }
  json j{{"format", kFormat2}, {"files", folder_name}, {"gates", json::array()}, {"not_carried", json::array()}};
  std::set<std::string> copied, named;
  std::size_t harnesses = 0;
  for (std::size_t g = 0; g < gates.size(); ++g) {
    json gj = planJson(gates[g]);
    gj.erase("format");
    if (gj.contains("harness") && root) {
      ++harnesses;
      json& h = gj["harness"];
      auto rel = [&](const std::string& abs) { return fs::path(abs).lexically_relative(*root).string(); };
      std::string source = gates[g].harness_source;
      std::vector<std::string> by_length = carried[g].files;
      std::sort(by_length.begin(), by_length.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
      for (const auto& f : by_length) source = relocate(source, f, rel(f));
      json files = json::array();
      for (const auto& f : carried[g].files) {
        files.push_back(rel(f));
        if (auto why = carried[g].left_behind.find(f); why != carried[g].left_behind.end()) {
          if (named.insert(f).second) j["not_carried"].push_back({{"file", f}, {"to", rel(f)}, {"why", why->second}});
          continue;
        }
        if (!copied.insert(f).second) continue;
        const fs::path to = folder / rel(f);
        fs::create_directories(to.parent_path(), ec);
        if (ec || !fs::copy_file(f, to, fs::copy_options::overwrite_existing, ec) || ec) {
          if (named.insert(f).second)
            j["not_carried"].push_back({{"file", f}, {"to", rel(f)}, {"why", "cannot be copied: " + ec.message()}});
          copied.erase(f);
        }
      }
      // An include directory of carried headers by its place in the folder;
      // one outside the checkout (a system one) as it is; the others hold
      // nothing the harness reads.
      json dirs = json::array();
      const fs::path project = gates[g].harness_root.empty() ? *root : fs::path(normal(gates[g].harness_root));
      for (const auto& d : gates[g].harness_include_dirs) {
        const std::string n = normal(d);
        if (under(*root, n) || n == root->string()) dirs.push_back(rel(n).empty() ? "." : rel(n));
        else if (!under(project, n) && n != project.string()) dirs.push_back(n);
      }
      // The notes and the call description name the header too (for people).
      auto shown = [&](std::string text) {
        for (const auto& f : by_length)
          for (std::size_t at = text.find(f); at != std::string::npos; at = text.find(f, at + 1))
            text.replace(at, f.size(), rel(f));
        return text;
      };
      h["calls"] = shown(gates[g].harness_calls);
      json notes = json::array();
      for (const auto& n : gates[g].harness_notes) notes.push_back(shown(n));
      h["notes"] = notes;
      h["header"] = rel(normal(gates[g].header));
      h["include_dirs"] = dirs;
      h["source"] = source;
      h["files"] = files;
    } else if (gj.contains("harness")) {
      gj["harness"]["header"] = fs::path(gates[g].header).filename().string();  // no harness: only a name
      gj["harness"]["include_dirs"] = json::array();
    }
    j["gates"].push_back(gj);
  }
  if (!copied.empty()) std::ofstream(folder / kMarker) << "headers carried with " << fs::path(path).filename().string() << "\n";
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw InputError(path + ": cannot write the plan");
  std::string line = "plan written to " + path + " (" + std::to_string(gates.size()) + " gate" +
                     (gates.size() == 1 ? "" : "s") + ", " + std::to_string(harnesses) + " harness" +
                     (harnesses == 1 ? "" : "es");
  if (!copied.empty())
    line += "; " + std::to_string(copied.size()) + " header" + (copied.size() == 1 ? "" : "s") + " carried in " +
            (plan_dir / folder_name).string() + ": copy it with the plan";
  line += ")";
  for (const auto& n : j["not_carried"])
    line += "\n" + n["file"].get<std::string>() + " not carried (" + n["why"].get<std::string>() + "): copy it to " +
            (plan_dir / folder_name / n["to"].get<std::string>()).string() + " on the GPU box";
  return line;
}

std::vector<Plan> loadPlan(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the plan");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::runtime_error("not a layergate selftest plan");
  if (j.value("format", "") != kFormat2) {
    // Format 1: the header by the path it had where the plan was made.
    Plan p = planFromJson(j);
    if (!p.header.empty() && p.harness_error.empty() && !fs::is_regular_file(p.header))
      throw std::runtime_error("header " + p.header + " (named by the plan) is not on this machine: save the plan "
                               "again with this layergate, which carries its headers in a folder beside it");
    return {p};
  }
  const fs::path plan_dir = fs::path(path).parent_path();
  const std::string name = j.contains("files") ? insideFolder(j["files"], "files") : planFolderName(path);
  const fs::path folder = plan_dir / name;
  const std::string folder_abs = normal(folder);
  if (!j.contains("gates") || !j["gates"].is_array()) throw std::runtime_error("gates: expected an array");
  std::vector<Plan> gates;
  bool needs_folder = false;
  for (std::size_t g = 0; g < j["gates"].size(); ++g) {
    const json& gj = j["gates"][g];
    Plan p = gateFromJson(gj);
    const std::string at = "gates[" + std::to_string(g) + "].harness";
    if (!p.header.empty() && p.harness_error.empty()) {
      const json& h = gj["harness"];
      needs_folder = true;
      p.header = (fs::path(folder_abs) / insideFolder(h["header"], at + ".header")).string();
      std::vector<std::string> dirs;
      for (std::size_t i = 0; i < p.harness_include_dirs.size(); ++i)
        dirs.push_back(fs::path(p.harness_include_dirs[i]).is_absolute()
                           ? p.harness_include_dirs[i]  // a system directory, as it was named
                           : normal(fs::path(folder_abs) / insideFolder(p.harness_include_dirs[i], at + ".include_dirs")));
      p.harness_include_dirs = dirs;
      p.harness_files.clear();
      if (h.contains("files") && !h["files"].is_array()) throw std::runtime_error(at + ".files: expected an array");
      for (const auto& f : h.value("files", json::array()))
        p.harness_files.push_back((fs::path(folder_abs) / insideFolder(f, at + ".files")).string());
      for (std::size_t at_token = p.harness_source.find(kFolderToken); at_token != std::string::npos;
           at_token = p.harness_source.find(kFolderToken, at_token))
        p.harness_source.replace(at_token, std::string(kFolderToken).size(), folder_abs + "/");
    }
    gates.push_back(std::move(p));
  }
  // What the GPU side would miss, named before anything runs: the folder, a
  // header left behind at save (the operator copies it in), a header lost since.
  if (needs_folder && !fs::is_directory(folder))
    throw std::runtime_error("the plan's folder " + folder.string() +
                             " is not beside it: copy the plan together with its folder");
  if (j.contains("not_carried")) {
    if (!j["not_carried"].is_array()) throw std::runtime_error("not_carried: expected an array");
    for (const auto& n : j["not_carried"]) {
      if (!n.is_object()) throw std::runtime_error("not_carried: expected objects");
      const std::string to = insideFolder(n.value("to", json()), "not_carried.to");
      if (!fs::is_regular_file(folder / to))
        throw std::runtime_error("header " + n.value("file", std::string("?")) + " was not carried (" +
                                 n.value("why", std::string("?")) + "): copy it to " + (folder / to).string());
    }
  }
  for (const auto& p : gates)
    for (const auto& f : p.harness_files)
      if (!fs::is_regular_file(f))
        throw std::runtime_error("header " + (folder / fs::path(f).lexically_relative(folder_abs)).string() +
                                 " is missing from the plan's folder: copy the plan together with its folder");
  return gates;
}

std::string describePlan(const std::vector<Plan>& gates, const std::string& path) {
  std::ostringstream out;
  std::set<std::string> files;
  for (std::size_t g = 0; g < gates.size(); ++g) {
    const Plan& p = gates[g];
    out << "  gate " << g + 1 << (p.target.empty() ? "" : " (" + p.target + ")") << ": ";
    if (p.header.empty()) out << "no harness";
    else if (!p.harness_error.empty()) out << "no harness: " << p.harness_error;
    else {
      out << "harness around " << p.header << ", " << harnessCells(p.matrix, false).size() << " cell(s), "
          << p.harness_files.size() << " header(s)";
      if (p.harness_tvm_ffi) out << ", needs tvm-ffi";
    }
    out << "\n";
    files.insert(p.harness_files.begin(), p.harness_files.end());
  }
  return "plan " + path + ": " + std::to_string(gates.size()) + " gate(s), " + std::to_string(files.size()) +
         " carried header(s), all present\n" + out.str();
}

}  // namespace layergate::selftest
