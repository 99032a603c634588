from cache_tools.guard_store import *
