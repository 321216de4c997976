# HYCC_CUDA_EMULATION: hycc's CUDA sources compiled as C++ against the CPU emulator of the CUDA
# runtime in tests/cuda_emu (kernels on fibers, streams on worker threads, checked copies), so the
# GPU tests run, kernels included, on a machine without a GPU. docs/gpu.md, "The CUDA emulator".
#
# hycc_cuda_emulated_sources(<out-var> <source>...): the translated copies of the sources.
function(hycc_cuda_emulated_sources out)
  set(result)
  foreach(src IN LISTS ARGN)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${src})
    set(dst ${CMAKE_BINARY_DIR}/cuda_emu_src/${rel}.cc)
    add_custom_command(OUTPUT ${dst}
      COMMAND ${CMAKE_COMMAND} -DIN=${src} -DOUT=${dst} -DNAME=${rel}
              -P ${CMAKE_SOURCE_DIR}/tests/cuda_emu/translate.cmake
      DEPENDS ${src} ${CMAKE_SOURCE_DIR}/tests/cuda_emu/translate.cmake
      COMMENT "cuda-emu: ${rel}")
    # GCC's flow analysis of the inlined per-block stages takes arrays that the unpacking fills
    # for maybe uninitialized (a false positive at -O3 that nvcc's front end does not report).
    set_source_files_properties(${dst} PROPERTIES COMPILE_OPTIONS -Wno-maybe-uninitialized)
    list(APPEND result ${dst})
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Shared: the emulated libnccl.so.2 below, which hycc loads at run time, must use the same
# emulated device (streams, memory, errors) as the program.
add_library(hycc_cuda_emu SHARED ${CMAKE_SOURCE_DIR}/tests/cuda_emu/fiber.cc
  ${CMAKE_SOURCE_DIR}/tests/cuda_emu/blocks.cc ${CMAKE_SOURCE_DIR}/tests/cuda_emu/runtime.cc)
target_include_directories(hycc_cuda_emu PUBLIC ${CMAKE_SOURCE_DIR}/tests/cuda_emu/include)
# Code built on the emulator knows it (the GPU tests shrink their largest tensors).
target_compile_definitions(hycc_cuda_emu PUBLIC HYCC_CUDA_EMULATION=1)
target_link_libraries(hycc_cuda_emu PRIVATE hycc_warnings Threads::Threads ${CMAKE_DL_LIBS})
# Its thread_locals (the block running on this thread, read at every threadIdx) in the static TLS
# block: the default model of a shared library calls __tls_get_addr at each read, which
# AddressSanitizer intercepts: 40% of the emulated GPU tests' time under the sanitizers.
# It holds 196 bytes of them, well within the static TLS that glibc keeps for libraries opened
# later (Python's ctypes opens it with libhycc_c.so).
target_compile_options(hycc_cuda_emu PRIVATE -ftls-model=initial-exec)

# NCCL's point-to-point calls between the processes of one machine, as libnccl.so.2 beside
# libhycc_cuda_emu.so, which loads it when a program starts (runtime.cc).
add_library(hycc_nccl_emu SHARED ${CMAKE_SOURCE_DIR}/tests/cuda_emu/nccl.cc)
set_target_properties(hycc_nccl_emu PROPERTIES OUTPUT_NAME nccl SOVERSION 2)
target_link_libraries(hycc_nccl_emu PRIVATE hycc_cuda_emu hycc_warnings)
