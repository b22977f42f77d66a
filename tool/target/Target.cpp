#include "target/Target.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/Errors.h"
#include "target/Keys.h"
#include "target/Paths.h"

namespace layergate::target {
namespace {

using nlohmann::json;

std::vector<std::string> strings(const json& j, const char* key, const std::string& origin) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  const json& v = j.at(key);
  if (!v.is_array()) throw InputError(origin + ": \"" + key + "\" must be a list of strings");
  for (const auto& x : v) {
    if (!x.is_string()) throw InputError(origin + ": \"" + key + "\" must be a list of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

template <typename V>
std::map<std::string, V> mapOf(const json& j, const char* key, const std::string& origin) {
  std::map<std::string, V> out;
  if (!j.contains(key)) return out;
  const json& v = j.at(key);
  if (!v.is_object()) throw InputError(origin + ": \"" + key + "\" must be an object");
  for (auto it = v.begin(); it != v.end(); ++it) {
    if constexpr (std::is_same_v<V, bool>) {
      if (!it.value().is_boolean()) throw InputError(origin + ": \"" + key + "." + it.key() + "\" must be true or false");
    } else {
      if (!it.value().is_string()) throw InputError(origin + ": \"" + key + "." + it.key() + "\" must be a string");
    }
    out[it.key()] = it.value().get<V>();
  }
  return out;
}

const json& object(const json& j, const char* key, const std::string& origin) {
  static const json empty = json::object();
  if (!j.contains(key)) return empty;
  if (!j.at(key).is_object()) throw InputError(origin + ": \"" + key + "\" must be an object");
  return j.at(key);
}

// An unsigned JSON number above INT64_MAX would wrap in get<std::int64_t>()
// (18446744073709551615 becomes -1).
bool tooBigForInt64(const json& x) {
  return x.is_number_unsigned() &&
         x.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
}


// A term (Variables.h): "name" or {"var": name}, {"var": name, "equals": v},
// {"const": v}, {"mul" | "add" | "sub" | "div": [term, term]}.
Term termOf(const json& j, const std::string& where, int depth = 0) {
  Term t;
  if (depth > 32) throw InputError(where + ": a term nests deeper than 32 levels");
  if (j.is_string()) {
    t.kind = Term::Kind::Var;
    t.var = j.get<std::string>();
    return t;
  }
  const char* shape = " must be a variable's name, {\"var\": name[, \"equals\": value]}, {\"const\": value} or "
                      "{\"mul\" | \"add\" | \"sub\" | \"div\": [term, term]} or {\"if\": term, \"then\": term, \"else\": term}";
  if (!j.is_object() || j.size() < 1) throw InputError(where + shape);
  auto scalar = [&](const json& x, Term& out) {
    if (x.is_string()) {
      out.kind = Term::Kind::Str;
      out.text = x.get<std::string>();
    } else if (x.is_boolean()) {
      out.kind = Term::Kind::Bool;
      out.b = x.get<bool>();
      out.text = out.b ? "true" : "false";
    } else if (x.is_number_integer() && !tooBigForInt64(x)) {
      out.kind = Term::Kind::Int;
      out.num = x.get<std::int64_t>();
      out.text = std::to_string(out.num);
    } else {
      throw InputError(where + shape);
    }
  };
  if (j.contains("var")) {
    if (!j.at("var").is_string()) throw InputError(where + shape);
    t.var = j.at("var").get<std::string>();
    t.kind = Term::Kind::Var;
    if (j.contains("equals")) {
      Term c;
      scalar(j.at("equals"), c);
      t.kind = Term::Kind::Equals;
      t.text = c.text;
    }
    return t;
  }
  if (j.contains("const")) {
    scalar(j.at("const"), t);
    return t;
  }
  if (j.contains("if")) {
    if (!j.contains("then") || !j.contains("else")) throw InputError(where + shape);
    t.kind = Term::Kind::If;
    t.args.push_back(termOf(j.at("if"), where, depth + 1));
    t.args.push_back(termOf(j.at("then"), where, depth + 1));
    t.args.push_back(termOf(j.at("else"), where, depth + 1));
    return t;
  }
  static const std::pair<const char*, Term::Kind> ops[] = {
      {"add", Term::Kind::Add}, {"sub", Term::Kind::Sub}, {"mul", Term::Kind::Mul}, {"div", Term::Kind::Div}};
  for (const auto& [k, kind] : ops) {
    if (!j.contains(k)) continue;
    const json& a = j.at(k);
    if (!a.is_array() || a.size() != 2) throw InputError(where + shape);
    t.kind = kind;
    t.args.push_back(termOf(a[0], where, depth + 1));
    t.args.push_back(termOf(a[1], where, depth + 1));
    return t;
  }
  throw InputError(where + shape);
}

std::map<std::string, Term> termsOf(const json& j, const char* key, const std::string& origin) {
  std::map<std::string, Term> out;
  if (!j.contains(key)) return out;
  if (!j.at(key).is_object()) throw InputError(origin + ": \"" + key + "\" must be an object");
  for (auto it = j.at(key).begin(); it != j.at(key).end(); ++it)
    out[it.key()] = termOf(it.value(), origin + ": \"" + key + "." + it.key() + "\"");
  return out;
}

Variables variablesOf(const json& j, const std::string& origin) {
  Variables out;
  if (!j.contains("variables")) return out;
  const json& a = j.at("variables");
  const std::string shape = origin + ": \"variables\" must be a list of {\"name\", \"type\": \"int\" | \"enum\" | "
                                     "\"bool\", \"values\", \"min\", \"max\", \"doc\", \"role\", \"probe\", \"cpp_types\"}";
  if (!a.is_array()) throw InputError(shape);
  for (const auto& x : a) {
    if (!x.is_object() || !x.contains("name") || !x.at("name").is_string() || !x.contains("type") ||
        !x.at("type").is_string())
      throw InputError(shape);
    Variable v;
    v.name = x.at("name").get<std::string>();
    const std::string where = origin + ": variable \"" + v.name + "\"";
    static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
    if (!std::regex_match(v.name, ident)) throw InputError(where + ": a name is a Python identifier");
    if (findVariable(out, v.name)) throw InputError(where + " is declared twice");
    std::string type = x.at("type").get<std::string>();
    v.type = type == "int" ? Variable::Type::Int : type == "enum" ? Variable::Type::Enum : Variable::Type::Bool;
    if (type != "int" && type != "enum" && type != "bool") throw InputError(where + ": \"type\" must be int, enum or bool");
    v.doc = x.value("doc", "");
    if (x.contains("values")) {
      if (!x.at("values").is_array() || v.type == Variable::Type::Bool) throw InputError(shape);
      for (const auto& e : x.at("values")) {
        if (v.type == Variable::Type::Enum && e.is_string()) v.names.push_back(e.get<std::string>());
        else if (v.type == Variable::Type::Int && e.is_number_integer() && !tooBigForInt64(e)) v.ints.push_back(e.get<std::int64_t>());
        else throw InputError(where + ": \"values\" must be " + (v.type == Variable::Type::Enum ? "strings" : "integers"));
      }
    }
    if (v.type == Variable::Type::Enum && v.names.empty()) throw InputError(where + ": an enum needs \"values\"");
    for (const char* k : {"min", "max"}) {
      if (!x.contains(k)) continue;
      const json& b = x.at(k);
      if (v.type != Variable::Type::Int || !b.is_number_integer() || tooBigForInt64(b))
        throw InputError(where + ": \"" + k + "\" is an integer bound of an int variable");
      (std::string(k) == "min" ? v.min : v.max) = b.get<std::int64_t>();
    }
    constexpr std::int64_t kBound = std::int64_t(1) << 62;
    auto outside = [&](std::int64_t x) { return x < -kBound || x > kBound; };
    if ((v.min && outside(*v.min)) || (v.max && outside(*v.max)) || std::any_of(v.ints.begin(), v.ints.end(), outside))
      throw InputError(where + ": values and bounds must lie within -2^62..2^62");
    if (v.min && v.max && *v.min > *v.max) throw InputError(where + ": \"min\" is above \"max\"");
    if (x.contains("probe")) {
      if (!x.at("probe").is_boolean()) throw InputError(where + ": \"probe\" must be true or false");
      v.probe = x.at("probe").get<bool>();
    }
    // A probe may be any integer the machine answers; a configuration is one
    // the report can list.
    if (v.type == Variable::Type::Int && !v.probe && v.ints.empty() && (!v.min || !v.max))
      throw InputError(where + ": an int variable needs \"values\" or both \"min\" and \"max\"");
    if (x.contains("role")) {
      if (!x.at("role").is_string()) throw InputError(where + ": \"role\" must be a string");
      v.role = x.at("role").get<std::string>();
      // role -> (type, probe) it requires
      static const std::map<std::string, std::pair<Variable::Type, bool>> roles = {
          {"ranks", {Variable::Type::Int, false}},
          {"link", {Variable::Type::Bool, false}},
          {"bytes", {Variable::Type::Int, false}},
          {"rank", {Variable::Type::Int, true}},
          {"element", {Variable::Type::Enum, false}}};
      auto r = roles.find(v.role);
      if (r == roles.end()) throw InputError(where + ": \"role\" must be ranks, link, bytes, rank or element");
      if (r->second.first != v.type || r->second.second != v.probe)
        throw InputError(where + ": the " + v.role + " role is " +
                         (r->second.first == Variable::Type::Int ? "an int "
                          : r->second.first == Variable::Type::Enum ? "an enum "
                                                                    : "a bool ") +
                         (r->second.second ? "probe" : "variable (not a probe)"));
      for (const auto& o : out)
        if (o.role == v.role) throw InputError(where + ": the " + v.role + " role is " + o.name + "'s already");
      if ((v.role == "ranks" || v.role == "bytes") && !v.ints.empty())
        throw InputError(where + ": the " + v.role + " role takes \"min\" and \"max\", not \"values\"");
    }
    if (x.contains("cpp_types")) {
      const json& m = x.at("cpp_types");
      if (v.role != "element" || !m.is_object())
        throw InputError(where + ": \"cpp_types\" is an object of the element role (C++ type -> value)");
      for (auto it = m.begin(); it != m.end(); ++it) {
        if (!it.value().is_string() ||
            std::find(v.names.begin(), v.names.end(), it.value().get<std::string>()) == v.names.end())
          throw InputError(where + ": \"cpp_types\"." + it.key() + " must be one of the variable's values");
        v.cpp_types[it.key()] = it.value().get<std::string>();
      }
    }
    if (v.role == "element" && v.cpp_types.empty())
      throw InputError(where + ": the element role needs \"cpp_types\" (C++ type -> value)");
    out.push_back(std::move(v));
  }
  return out;
}

// Every variable a term names is declared.
void checkTerms(const std::map<std::string, Term>& ts, const Variables& vs, const std::string& where) {
  std::function<void(const std::string&, const Term&)> one = [&](const std::string& key, const Term& t) {
    if ((t.kind == Term::Kind::Var || t.kind == Term::Kind::Equals) && !findVariable(vs, t.var))
      throw InputError(where + "." + key + "\": \"" + t.var + "\" is not one of the target's variables");
    for (const auto& a : t.args) one(key, a);
  };
  for (const auto& [k, t] : ts) one(k, t);
}

}  // namespace

namespace {

json parseJson(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw InputError(origin + ": a target must be a JSON object");
  checkKeys(j, origin);
  return j;
}

json readJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read target description");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parseJson(ss.str(), path);
}

Target fromJson(const json& j, const std::string& origin) {
  Target t;
  try {
    if (!j.contains("name") || !j.at("name").is_string() || j.at("name").get<std::string>().empty())
      throw InputError(origin + ": a target needs a non-empty \"name\"");
    t.name = j.at("name").get<std::string>();
    t.description = j.value("description", "");
    t.platform = j.value("platform", "cuda");
    // A word `check --platform` can name: lower-case letters and digits ("all" means every platform).
    if (t.platform.empty() || t.platform == "all" ||
        !std::all_of(t.platform.begin(), t.platform.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }))
      throw InputError(origin + ": \"platform\" must be a lower-case word such as \"cuda\" or \"rocm\" (not \"" +
                       t.platform + "\")");
    t.extends = j.value("extends", "");
    t.unmodelled = j.value("unmodelled", "");
    const json& d = object(j, "discovery", origin);
    t.discovery.python_paths = strings(d, "python", origin);
    t.discovery.cpp_paths = strings(d, "cpp", origin);
    t.discovery.required_paths = strings(d, "requires", origin);
    const json& chain = object(d, "chain", origin);
    t.discovery.chain_python = strings(chain, "python", origin);
    t.discovery.chain_cpp = strings(chain, "cpp", origin);
    t.discovery.same_root = d.value("same_root", true);
    t.discovery.fallback = d.value("fallback", false);
    t.discovery.reads = strings(d, "reads", origin);

    const json& p = object(j, "python", origin);
    t.python.class_names = strings(p, "classes", origin);
    t.python.per_call_methods = strings(p, "per_call_methods", origin);
    const json& en = object(p, "enabling", origin);
    t.python.enabling_attr = en.value("attribute", "disabled");
    t.python.enabling_value = en.value("value", false);
    t.python.probes = mapOf<std::string>(p, "probes", origin);
    t.python.platform_flags = mapOf<bool>(p, "platform_flags", origin);
    t.variables = variablesOf(j, origin);
    t.python.values = termsOf(p, "values", origin);
    checkTerms(t.python.values, t.variables, origin + ": \"python.values");
    t.python.bool_env_helpers = strings(p, "bool_env_helpers", origin);
    t.python.env_modules = strings(p, "env_modules", origin);
    t.python.outputs = mapOf<std::string>(p, "outputs", origin);
    t.python.selection_functions = strings(p, "selection", origin);
    const json& cos = object(p, "call_outputs", origin);
    for (auto it = cos.begin(); it != cos.end(); ++it) {
      const std::string where = origin + ": \"python.call_outputs." + it.key() + "\"";
      const json& c = it.value();
      static const std::regex attribute("[A-Za-z_][A-Za-z0-9_]*(\\(\\))?");
      if (!c.is_object() || !c.contains("method") || !c.at("method").is_string() || !c.contains("call") ||
          !c.at("call").is_string() || !c.contains("argument") || !c.at("argument").is_number_integer() ||
          c.at("argument").get<std::int64_t>() < 0 || c.at("argument").get<std::int64_t>() > 255 ||
          (c.contains("attribute") &&
           (!c.at("attribute").is_string() || !std::regex_match(c.at("attribute").get<std::string>(), attribute))))
        throw InputError(where + " must be an object {\"method\": str, \"call\": str, \"argument\": int in 0..255"
                                 "[, \"attribute\": \"name\" or \"name()\"]}");
      PythonGateSpec::CallOutput co;
      co.method = c.at("method").get<std::string>();
      co.call = c.at("call").get<std::string>();
      co.argument = c.at("argument").get<int>();
      co.attribute = c.value("attribute", "");
      t.python.call_outputs[it.key()] = co;
    }
    const json& ow = object(p, "only_when", origin);
    for (auto it = ow.begin(); it != ow.end(); ++it) {
      const std::string where = origin + ": \"python.only_when." + it.key() + "\"";
      if (!t.python.call_outputs.count(it.key()))
        throw InputError(where + ": not a value of python.call_outputs");
      if (it.value().is_boolean()) t.python.only_when[it.key()] = it.value().get<bool>() ? 1 : 0;
      else if (it.value().is_number_integer() && !tooBigForInt64(it.value()))
        t.python.only_when[it.key()] = it.value().get<std::int64_t>();
      else throw InputError(where + " must be a boolean or an integer");
    }
    const json& pol = object(p, "policy", origin);
    t.python.policy.functions = strings(pol, "functions", origin);
    t.python.policy.outputs = mapOf<std::string>(pol, "outputs", origin);
    t.python.policy.nbytes_product = strings(pol, "nbytes", origin);
    t.python.policy.returns_bool = pol.value("returns", "") == "bool";
    const json& ins = object(pol, "inputs", origin);
    for (auto it = ins.begin(); it != ins.end(); ++it) {
      const std::string where = origin + ": \"python.policy.inputs." + it.key() + "\"";
      if (!it.value().is_object()) throw InputError(where + " must be an object {\"var\", \"values\" | \"min\", \"max\"}");
      PythonGateSpec::PolicyInput in;
      in.param = it.key();
      in.var = it.value().value("var", it.key());
      in.present = it.value().value("present", false);
      if (in.present) {
        const Variable* v = findVariable(t.variables, in.var);
        if (!v || v->type != Variable::Type::Bool)
          throw InputError(where + ": \"present\" needs \"var\" to name a declared bool variable");
      }
      if (it.value().contains("values")) {
        if (!it.value().at("values").is_array()) throw InputError(where + ".values must be a list of integers");
        for (const auto& x : it.value().at("values")) {
          if (!x.is_number_integer() || tooBigForInt64(x)) throw InputError(where + ".values must be a list of integers");
          in.values.push_back(x.get<std::int64_t>());
        }
      }
      for (const char* k : {"min", "max"}) {
        if (!it.value().contains(k)) continue;
        const json& b = it.value().at(k);
        if (!b.is_number_integer() || tooBigForInt64(b)) throw InputError(where + "." + k + " must be an integer");
        (std::string(k) == "min" ? in.min : in.max) = b.get<std::int64_t>();
      }
      t.python.policy.inputs.push_back(std::move(in));
    }

    const json& c = object(j, "cpp", origin);
    t.cpp.class_names = strings(c, "classes", origin);
    t.cpp.dispatch_functions = strings(c, "dispatch_functions", origin);
    t.cpp.members = mapOf<std::string>(c, "members", origin);
    t.cpp.byte_count_names = strings(c, "byte_count_names", origin);
    t.cpp.include_dirs = strings(c, "include_dirs", origin);
    t.cpp.defines = strings(c, "defines", origin);
    t.cpp.preconditions = strings(c, "preconditions", origin);
    t.cpp.values = termsOf(c, "values", origin);
    checkTerms(t.cpp.values, t.variables, origin + ": \"cpp.values");
    t.cpp.follow_calls = c.value("follow_calls", false);
    t.python.variables = t.cpp.variables = t.variables;
    t.python.roles = t.cpp.roles = t.roles = rolesOf(t.variables);
    if (!t.roles.cells() && (!t.roles.ranks.empty() || !t.roles.link.empty() || !t.roles.bytes.empty()))
      throw InputError(origin + ": \"variables\": the ranks, link and bytes roles go together (the cells of a group)");
    // A region is over configurations only: probes belong to the cells.
    for (const auto& v : t.variables)
      if (v.probe && !t.roles.cells())
        throw InputError(origin + ": variable \"" + v.name + "\": a probe needs the ranks, link and bytes roles (the cells of a group)");
    if (c.contains("std")) {
      if (!c.at("std").is_string()) throw InputError(origin + ": \"std\" must be a string such as \"c++20\"");
      t.cpp.std = c.at("std").get<std::string>();
      static const std::set<std::string> known = {"c++14", "c++17", "c++20", "c++23", "gnu++17", "gnu++20"};
      if (!known.count(t.cpp.std)) throw InputError(origin + ": \"std\" must be one of c++14, c++17, c++20, c++23, gnu++17, gnu++20");
    }
    for (const auto& d : t.cpp.include_dirs)
      if (d.empty() || d.front() == '/' || d.find("..") != std::string::npos)
        throw InputError(origin + ": \"include_dirs\" entries must be relative paths inside the checkout (\"" + d + "\")");
  } catch (const json::exception& e) {
    throw InputError(origin + ": bad target description: " + e.what());
  }
  // cpp.classes may be empty: the dispatch is then a namespace-scope function.
  if (t.unmodelled.empty() && ((t.python.class_names.empty() && !t.python.policy.active()) || t.cpp.dispatch_functions.empty()))
    throw InputError(origin + ": a target needs python.classes (or python.policy.functions) and cpp.dispatch_functions");
  return t;
}

// The child's keys over the base's: objects merge key by key, null deletes.
void mergeInto(json& base, const json& child) {
  for (auto it = child.begin(); it != child.end(); ++it) {
    if (it.value().is_null()) {
      base.erase(it.key());
    } else if (it.value().is_object() && base.contains(it.key()) && base[it.key()].is_object()) {
      mergeInto(base[it.key()], it.value());
    } else {
      base[it.key()] = it.value();
    }
  }
}

struct RawTarget {
  json j;
  std::string origin;
};

// Resolves "extends" for every raw description; keys are target names.
std::vector<Target> resolve(const std::map<std::string, RawTarget>& raw) {
  std::map<std::string, json> done;
  std::function<json(const std::string&, std::vector<std::string>&)> flat =
      [&](const std::string& name, std::vector<std::string>& chain) -> json {
    if (auto d = done.find(name); d != done.end()) return d->second;
    const RawTarget& r = raw.at(name);
    if (std::find(chain.begin(), chain.end(), name) != chain.end()) {
      std::string cycle;
      for (const auto& c : chain) cycle += c + " -> ";
      throw InputError(r.origin + ": \"extends\" cycle: " + cycle + name);
    }
    json out = r.j;
    if (r.j.contains("extends")) {
      if (!r.j.at("extends").is_string() || r.j.at("extends").get<std::string>().empty())
        throw InputError(r.origin + ": \"extends\" must be the name of another target");
      std::string base = r.j.at("extends").get<std::string>();
      if (!raw.count(base)) {
        std::string known;
        for (const auto& [n, _] : raw) known += (known.empty() ? "" : ", ") + n;
        throw InputError(r.origin + ": \"extends\": unknown target '" + base + "' (known: " + known + ")");
      }
      chain.push_back(name);
      out = flat(base, chain);
      chain.pop_back();
      // Not inherited: who the target is and how it is found.
      for (const char* k : {"name", "description", "discovery", "extends"}) out.erase(k);
      mergeInto(out, r.j);
    }
    done[name] = out;
    return out;
  };
  std::vector<Target> out;
  for (const auto& [name, r] : raw) {
    std::vector<std::string> chain;
    out.push_back(fromJson(flat(name, chain), r.origin));
  }
  return out;  // std::map order: sorted by name
}

std::map<std::string, RawTarget> readAll(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::map<std::string, RawTarget> raw;
  for (const auto& path : paths) {
    json j = readJson(path);
    if (!j.contains("name") || !j.at("name").is_string() || j.at("name").get<std::string>().empty())
      throw InputError(path + ": a target needs a non-empty \"name\"");
    std::string name = j.at("name").get<std::string>();
    if (auto it = raw.find(name); it != raw.end())
      throw InputError(path + ": target name '" + name + "' is already used by " + it->second.origin);
    raw[name] = {std::move(j), path};
  }
  return raw;
}

}  // namespace

Target parseTarget(const std::string& text, const std::string& origin) {
  json j = parseJson(text, origin);
  if (j.contains("extends"))
    throw InputError(origin + ": \"extends\" needs the other target files: load it from its rules directory");
  return fromJson(j, origin);
}

Target loadTarget(const std::string& path) {
  json j = readJson(path);
  if (!j.contains("extends")) return fromJson(j, path);
  std::string dir = std::filesystem::path(path).parent_path().string();
  std::string name = j.value("name", "");
  for (auto& t : resolve(readAll(dir.empty() ? "." : dir)))
    if (t.name == name) return t;
  throw InputError(path + ": cannot resolve \"extends\"");
}

std::vector<Target> loadTargets(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path targets = fs::path(dir) / "targets";
  if (!fs::is_directory(targets, ec)) throw InputError(dir + ": no targets/ folder in the rules directory");
  auto raw = readAll(targets.string());
  if (raw.empty()) throw InputError(targets.string() + ": no target descriptions (*.json)");
  auto out = resolve(raw);
  for (auto& t : out) t.file = raw.at(t.name).origin;
  return out;
}

bool isTargetFile(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

std::vector<std::string> ruleDirs(const RuleSet& rules) {
  std::vector<std::string> out;
  if (rules.bundled) out.push_back(rules.bundled_dir.empty() ? defaultRulesDir() : rules.bundled_dir);
  out.insert(out.end(), rules.dirs.begin(), rules.dirs.end());
  return out;
}

std::vector<Target> loadTargets(const RuleSet& rules) {
  namespace fs = std::filesystem;
  if (!rules.bundled && rules.dirs.empty() && rules.files.empty())
    throw InputError("no target descriptions: the bundled rules are off (--no-bundled-rules or bundled-rules = false) "
                     "and no --rules DIR or --target FILE is given");
  std::map<std::string, RawTarget> raw;
  std::map<std::string, std::string> replaced;  // name -> the file whose target it replaces
  // A later layer's target replaces an earlier one of its name. One that
  // "extends" its own name changes the target it replaces, key by key: the
  // replaced description is its base (name, description and discovery too).
  auto layer = [&](std::map<std::string, RawTarget> more) {
    for (auto& [name, r] : more) {
      auto it = raw.find(name);
      if (it != raw.end()) {
        replaced[name] = it->second.origin;
        if (r.j.contains("extends") && r.j.at("extends") == name) {
          json merged = it->second.j;
          json child = r.j;
          child.erase("extends");
          mergeInto(merged, child);
          r.j = std::move(merged);
        }
      }
      raw[name] = std::move(r);
    }
  };
  std::error_code ec;
  if (rules.bundled) {
    const std::string dir = rules.bundled_dir.empty() ? defaultRulesDir() : rules.bundled_dir;
    fs::path targets = fs::path(dir) / "targets";
    if (!fs::is_directory(targets, ec)) throw InputError(dir + ": no targets/ folder in the rules directory");
    layer(readAll(targets.string()));
  }
  for (const auto& dir : rules.dirs) {
    if (!fs::is_directory(dir, ec))
      throw InputError(dir + (fs::exists(dir, ec) ? ": not a directory" : ": no such directory") +
                       " (--rules takes a directory of target descriptions)");
    fs::path targets = fs::path(dir) / "targets";
    auto more = readAll(fs::is_directory(targets, ec) ? targets.string() : dir);
    if (more.empty()) throw InputError(dir + ": no target descriptions (targets/*.json or *.json)");
    layer(std::move(more));
  }
  std::map<std::string, std::string> from_files;
  for (const auto& file : rules.files) {
    if (!fs::exists(file, ec)) throw InputError(file + ": no such target file");
    if (fs::is_directory(file, ec)) throw InputError(file + ": is a directory, expected a target file (.json)");
    json j = readJson(file);
    if (!j.contains("name") || !j.at("name").is_string() || j.at("name").get<std::string>().empty())
      throw InputError(file + ": a target needs a non-empty \"name\"");
    std::string name = j.at("name").get<std::string>();
    if (auto it = from_files.find(name); it != from_files.end())
      throw InputError(file + ": target name '" + name + "' is already used by " + it->second);
    from_files[name] = file;
    std::map<std::string, RawTarget> one;
    one[name] = {std::move(j), file};
    layer(std::move(one));
  }
  auto out = resolve(raw);
  for (auto& t : out) {
    t.file = raw.at(t.name).origin;
    if (auto it = replaced.find(t.name); it != replaced.end()) t.replaces = it->second;
  }
  return out;
}

std::string defaultRulesDir() { return paths::rulesDir(); }

}  // namespace layergate::target
