torch::Tensor forward(torch::Tensor a, torch::Tensor b);
