from cache_tools.transfer import *
