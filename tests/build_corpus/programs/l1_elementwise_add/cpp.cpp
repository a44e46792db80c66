torch::Tensor elementwise_add_cuda(torch::Tensor a, torch::Tensor b);
