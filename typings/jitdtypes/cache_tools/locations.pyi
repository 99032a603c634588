from cache_tools.locations import *
