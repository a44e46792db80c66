torch::Tensor forward(torch::Tensor x, double p);
