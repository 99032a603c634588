from kernels_templates.common import *
