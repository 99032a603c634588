from cache_tools.triton_artifacts import *
