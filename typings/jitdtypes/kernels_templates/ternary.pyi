from kernels_templates.ternary import *
