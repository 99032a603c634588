from kernels_templates.elementwise_calls import *
