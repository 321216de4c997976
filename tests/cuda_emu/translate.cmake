# Makes a .cu file compilable as C++ for the CUDA emulator: every launch
# `kernel<<<grid, block, shared, stream>>>(args)` becomes
# `kernel * ::cuda_emu::LaunchConfig(__FILE__, __LINE__, grid, block, shared, stream)(args)`;
# a #line directive keeps diagnostics and launch locations on the original file.
# cmake -DIN=src.cu -DOUT=out.cc -DNAME=relative/name.cu -P translate.cmake
file(READ "${IN}" text)
string(REGEX REPLACE "<<<([^>]*)>>>" " * ::cuda_emu::LaunchConfig(__FILE__, __LINE__, \\1)"
       text "${text}")
file(WRITE "${OUT}.tmp" "#line 1 \"${NAME}\"\n${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
