from kernels_templates import *
