from kernels_templates.matmul_calls import *
