# Read by llama.cpp's project() while llama-cpp-python is built (`make install`): build and install
# only the library the Python bindings load. llama-cpp-python turns on llama.cpp's common
# utilities (a large library with an HTTP client, which the bindings never load); a variable set
# here, in llama.cpp's own scope, turns them off again.
set(LLAMA_BUILD_COMMON OFF)
