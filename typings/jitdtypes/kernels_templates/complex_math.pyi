from kernels_templates.complex_math import *
