from cache_tools.package_store import *
