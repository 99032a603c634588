from kernels_templates.fft import *
