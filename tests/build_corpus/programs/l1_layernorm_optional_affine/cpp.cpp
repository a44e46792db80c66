#include <optional>
torch::Tensor forward(torch::Tensor x, std::optional<torch::Tensor> weight, c10::optional<torch::Tensor> bias, double eps);
