torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias);
