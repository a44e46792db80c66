#include <tuple>
std::tuple<torch::Tensor, torch::Tensor> forward(torch::Tensor x);
