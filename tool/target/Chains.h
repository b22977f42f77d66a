// Where a checkout's selection layer in vLLM's shape lives (rules/selection/
// *.json): the files, the class and the method that tries the all-reduce
// implementations in order (CudaCommunicator.all_reduce in vLLM and
// Aphrodite, GroupCoordinator._resolve_outplace_all_reduce_method in SGLang),
// and the selection functions whose classes an attribute may hold.
#pragma once

#include <string>
#include <vector>

namespace layergate::target {

struct ChainSpec {
  std::string name;
  std::string description;
  std::vector<std::string> files;    // paths relative to a checkout's root
  std::vector<std::string> classes;  // the class that holds the method
  std::vector<std::string> methods;  // the method that tries them in order
  // A function whose call gives the class an attribute holds
  // (`self.ca_comm = dispatch_custom_allreduce()(...)`): the classes it returns.
  std::vector<std::string> selection_functions;
};

// Every *.json under <dir>/selection/, sorted by name; none when there is no
// such folder. InputError (file first, one line) for a malformed description.
std::vector<ChainSpec> loadChains(const std::string& dir);
ChainSpec parseChain(const std::string& json_text, const std::string& origin);

}  // namespace layergate::target
