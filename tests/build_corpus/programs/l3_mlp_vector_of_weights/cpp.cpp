#include <vector>
torch::Tensor forward(torch::Tensor x, std::vector<torch::Tensor> weights, std::vector<torch::Tensor> biases);
