# hycc's torch.distributed backend (src/torch; docs/torch.md): the Python extension module
# _hycc_torch, built against the PyTorch of the project's Python environment (HYCC_PYTHON) when
# it has one. Checked at every configure, so a build configured before the environment existed
# picks the backend up at the next (`make test` makes the environment first).
set(HYCC_WITH_TORCH "AUTO" CACHE STRING
    "Build the PyTorch backend: ON, OFF, or AUTO (when HYCC_PYTHON has torch)")
set_property(CACHE HYCC_WITH_TORCH PROPERTY STRINGS AUTO ON OFF)
set(HYCC_HAVE_TORCH OFF)
if(NOT HYCC_WITH_TORCH STREQUAL "OFF")
  if(HYCC_SANITIZE)
    set(hycc_torch_why "not under the sanitizers (torch is not instrumented)")
  elseif(NOT EXISTS "${HYCC_PYTHON}")
    set(hycc_torch_why "no Python environment at ${HYCC_VENV} (make python)")
  else()
    set(hycc_torch_settings "${CMAKE_BINARY_DIR}/generated/torch_settings.cmake")
    execute_process(COMMAND "${HYCC_PYTHON}" "${CMAKE_SOURCE_DIR}/cmake/torch_flags.py"
                            "${hycc_torch_settings}"
                    RESULT_VARIABLE hycc_torch_rc ERROR_VARIABLE hycc_torch_why
                    OUTPUT_QUIET)
    if(hycc_torch_rc EQUAL 0)
      include("${hycc_torch_settings}")
      set(HYCC_HAVE_TORCH ON)
    endif()
  endif()
  if(NOT HYCC_HAVE_TORCH AND HYCC_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "HYCC_WITH_TORCH=ON, but: ${hycc_torch_why}")
  endif()
endif()

if(HYCC_HAVE_TORCH)
  message(STATUS "PyTorch backend: torch ${HYCC_TORCH_VERSION} from ${HYCC_PYTHON}")
  file(GLOB HYCC_TORCH_SOURCES CONFIGURE_DEPENDS src/torch/*.cc)
  add_library(hycc_torch MODULE ${HYCC_TORCH_SOURCES})
  set_target_properties(hycc_torch PROPERTIES PREFIX "" OUTPUT_NAME _hycc_torch
    SUFFIX "${HYCC_TORCH_EXT_SUFFIX}" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(hycc_torch PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_include_directories(hycc_torch SYSTEM PRIVATE ${HYCC_TORCH_INCLUDE_DIRS}
    ${HYCC_TORCH_PYTHON_INCLUDE})
  target_compile_definitions(hycc_torch PRIVATE TORCH_EXTENSION_NAME=_hycc_torch
    TORCH_API_INCLUDE_EXTENSION_H _GLIBCXX_USE_CXX11_ABI=${HYCC_TORCH_CXX11_ABI}
    ${HYCC_TORCH_DEFINITIONS})
  target_link_directories(hycc_torch PRIVATE ${HYCC_TORCH_LIBRARY_DIRS})
  # torch's libraries are loaded by `import torch` before the module; hycc's static library goes
  # inside, its symbols hidden.
  target_link_libraries(hycc_torch PRIVATE hycc hycc_warnings c10 torch torch_cpu torch_python)
  target_link_options(hycc_torch PRIVATE -Wl,--exclude-libs,ALL)
  # CUDA tensors: where torch is a CUDA build and hycc has its device code (not the emulator's,
  # which cannot share a process with torch's CUDA runtime).
  if(HYCC_TORCH_CUDA AND HYCC_HAVE_CUDA AND NOT HYCC_CUDA_EMULATION)
    target_compile_definitions(hycc_torch PRIVATE HYCC_TORCH_CUDA=1)
    target_include_directories(hycc_torch SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
    target_link_libraries(hycc_torch PRIVATE c10_cuda)
    message(STATUS "PyTorch backend: CUDA tensors through hycc's device collectives")
  endif()
else()
  message(STATUS "PyTorch backend: not built (${hycc_torch_why})")
endif()
