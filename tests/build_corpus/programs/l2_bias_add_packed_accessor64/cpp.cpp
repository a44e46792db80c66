at::Tensor forward(at::Tensor x, at::Tensor bias);
