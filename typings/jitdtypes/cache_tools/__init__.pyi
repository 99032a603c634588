from cache_tools import *
