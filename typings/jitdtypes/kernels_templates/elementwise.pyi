from kernels_templates.elementwise import *
