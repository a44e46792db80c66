#include <torch/torch.h>

torch::Tensor hardswish_cuda(torch::Tensor x);
torch::Tensor forward(torch::Tensor x) { return hardswish_cuda(torch::nn::functional::relu(x)); }
