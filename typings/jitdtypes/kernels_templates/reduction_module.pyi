from kernels_templates.reduction_module import *
