from cache_tools.atomic import *
