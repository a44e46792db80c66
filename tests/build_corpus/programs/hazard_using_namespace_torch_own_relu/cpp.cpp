#include <torch/extension.h>
using namespace torch;

Tensor forward(Tensor x);
