// The static side of the self-test, from layergate's own analysis: the
// configuration matrix of the gate and dispatch (driver::analyse or, for a
// directory, driver::scan) and the harness planned from the C++ frontend's
// facts about the user's dispatch header.
//
// Takes: selftest Options. Returns: a Plan per gate (--check: every gate
// found, each with the harness around its dispatch; --header: that one); the whole `layergate selftest`
// command (plan, then the GPU phases) for the CLI.
#pragma once

#include "report/Report.h"
#include "selftest/Selftest.h"

namespace layergate::selftest {

StaticMatrix matrixFromResult(const report::Result& r);
std::vector<Plan> makePlan(const Options& o);
// `layergate selftest`: exit status as documented in Selftest.h. Throws
// InputError for bad input (exit 2 in the CLI).
int selftestCommand(const Options& o);

}  // namespace layergate::selftest
