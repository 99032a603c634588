from kernels_templates.unary import *
