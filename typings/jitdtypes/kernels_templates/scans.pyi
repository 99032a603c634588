from kernels_templates.scans import *
