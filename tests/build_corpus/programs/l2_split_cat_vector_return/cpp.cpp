std::vector<torch::Tensor> swish_and_concat(torch::Tensor a, torch::Tensor b);
torch::Tensor concat_only(torch::Tensor a, torch::Tensor b);
