from cache_tools.store import *
