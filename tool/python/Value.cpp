// Values: constructors and formula helpers (see Value.h).
#include "python/Value.h"

#include <string>
#include <utility>
#include <vector>

namespace layergate::python::detail {

Value vNone() { Value v; v.k = Value::K::None; return v; }
Value vBool(ExprPtr e) { Value v; v.k = Value::K::Bool; v.e = std::move(e); return v; }
Value vInt(ExprPtr e) { Value v; v.k = Value::K::Int; v.e = std::move(e); return v; }
Value vStr(ExprPtr e, bool lowered) {
  Value v; v.k = Value::K::Str; v.e = std::move(e); v.lowered = lowered; return v;
}
Value vList(std::vector<Value> items) { Value v; v.k = Value::K::List; v.items = std::move(items); return v; }
Value vObject(std::string tag, std::string text) {
  Value v; v.k = Value::K::Object; v.tag = std::move(tag); v.text = std::move(text); return v;
}

Value vSized(ExprPtr len) {
  Value v = vObject("sized", "list");
  v.e = std::move(len);
  return v;
}

ExprPtr iteB(const ExprPtr& c, const ExprPtr& t, const ExprPtr& e) {
  if (model::isTrue(c)) return t;
  if (model::isFalse(c)) return e;
  if (t == e) return t;
  if (model::isTrue(t)) return model::Or(c, e);
  if (model::isFalse(t)) return model::And(model::Not(c), e);
  if (model::isTrue(e)) return model::Or(model::Not(c), t);
  if (model::isFalse(e)) return model::And(c, t);
  if (e == c) return model::And(c, t);
  if (t == c) return model::Or(c, e);
  return model::Ite(c, t, e);
}

ExprPtr boolToInt(const ExprPtr& b) { return model::Ite(b, model::IntC(1), model::IntC(0)); }

}  // namespace layergate::python::detail
