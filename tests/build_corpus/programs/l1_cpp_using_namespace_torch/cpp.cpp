using namespace torch;
Tensor mish_cuda(Tensor x);
