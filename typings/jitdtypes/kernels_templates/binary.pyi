from kernels_templates.binary import *
