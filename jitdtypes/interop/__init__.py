"""Ways into and out of the 16-bit complex dtypes that PyTorch refuses.

numpy_arrays.py    Tensor.numpy, torch.from_numpy/as_tensor/tensor for ml_dtypes complex32/bcomplex32
complex_views.py   torch.view_as_complex on bfloat16 pairs
"""
