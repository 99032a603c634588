from kernels_templates.matmul import *
