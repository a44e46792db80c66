torch::Tensor forward(torch::Tensor x);
