from kernels_templates.reductions import *
