from kernels_templates.launcher import *
