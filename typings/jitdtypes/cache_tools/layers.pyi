from cache_tools.layers import *
