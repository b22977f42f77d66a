// Registration of checks. Static-initialiser registration is dropped by the
// linker in static libraries, so each check file exports a factory and
// Check.cpp lists the factories: adding a check is one line there.
#pragma once

#include <memory>

#define LAYERGATE_CHECK_FACTORY(Class) \
  std::unique_ptr<Check> make##Class() { return std::make_unique<Class>(); }
