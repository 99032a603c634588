from cache_tools.inventory import *
