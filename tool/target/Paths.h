// Where layergate's shipped data lives: the target descriptions (rules/) and
// the stub headers the C++ frontend parses with (tool/cpp/stubs in the
// source tree). Here, not in cli/, because the stages that read them (target,
// cpp) sit below the CLI.
//
// Each is looked up in this order, first existing wins:
//   1. an environment override ($LAYERGATE_RULES, $LAYERGATE_STUBS);
//   2. the install layout relative to the running binary:
//      <dir of /proc/self/exe>/../share/layergate/{rules,stubs};
//   3. the source tree this binary was built from (LAYERGATE_SOURCE_DIR),
//      so that build/tool/layergate and the tests work without installing.
#pragma once

#include <string>

namespace layergate::paths {

// Directory of the running executable ("" when /proc/self/exe is unreadable).
std::string exeDir();
// The rules directory (holds targets/*.json).
std::string rulesDir();
// The stub header directory (holds cuda/, torch/, layergate_cuda_prelude.h).
std::string stubDir();

}  // namespace layergate::paths
