# `cmake --install BUILD --prefix PREFIX` (or `make install PREFIX=...`): what a program built
# elsewhere needs (docs/install.md).
#   include/hycc/           the C++ and C headers, config.h (HYCC_VERSION, HYCC_HAVE_CUDA)
#   lib/libhycc.a           the C++ library: find_package(hycc) gives hycc::hycc
#   lib/libhycc_c.so        the C API: hycc::hycc_c, or pkg-config hycc_c
#   lib/libhycc_mpi.so      the drop-in library (LD_PRELOAD)
#   lib/cmake/hycc/         the CMake package
#   lib/pkgconfig/hycc_c.pc
#   bin/                    hycc-bench, hycc-sim, hycc-train
#   HYCC_INSTALL_PYTHONDIR  the Python package, which finds lib/libhycc_c.so from there
# Every path is relative to the prefix, so an installed tree can be moved.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Where the Python package goes: the interpreter's own layout under the prefix
# (lib/python3.X/site-packages; Debian's lib/python3.X/dist-packages, which Debian's Python
# searches under /usr/local).
if(NOT DEFINED HYCC_INSTALL_PYTHONDIR)
  set(hycc_pythondir "${CMAKE_INSTALL_LIBDIR}/python3/site-packages")
  find_program(HYCC_PYTHON3 python3)
  if(HYCC_PYTHON3)
    execute_process(
      COMMAND ${HYCC_PYTHON3} -c
        "import os, sysconfig; p = sysconfig.get_path('purelib', vars={'base': '/B', 'platbase': '/B'}); r = os.path.relpath(p, '/B'); print(r[6:] if r.startswith('local/') else r)"
      OUTPUT_VARIABLE hycc_detected OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE hycc_rc)
    if(hycc_rc EQUAL 0 AND hycc_detected)
      set(hycc_pythondir "${hycc_detected}")
    endif()
  endif()
  set(HYCC_INSTALL_PYTHONDIR "${hycc_pythondir}" CACHE STRING
      "Where the Python package is installed, relative to the prefix")
endif()

install(TARGETS hycc hycc_c EXPORT hyccTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS hycc_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS hycc-bench hycc-sim hycc-train hycc-policy RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/hycc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_BINARY_DIR}/generated/hycc/config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hycc)

set(hycc_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/hycc)
install(EXPORT hyccTargets NAMESPACE hycc:: DESTINATION ${hycc_cmakedir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/hyccConfig.cmake.in
  ${CMAKE_BINARY_DIR}/generated/hyccConfig.cmake INSTALL_DESTINATION ${hycc_cmakedir})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/generated/hyccConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/generated/hyccConfig.cmake
        ${CMAKE_BINARY_DIR}/generated/hyccConfigVersion.cmake DESTINATION ${hycc_cmakedir})

set(hycc_pcdir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH HYCC_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${hycc_pcdir} ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" HYCC_PC_TO_PREFIX "${HYCC_PC_TO_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/hycc_c.pc.in ${CMAKE_BINARY_DIR}/generated/hycc_c.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/hycc_c.pc DESTINATION ${hycc_pcdir})

# The Python package, and where libhycc_c.so lies from it (python/hycc/_lib.py reads it).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/hycc DESTINATION ${HYCC_INSTALL_PYTHONDIR}
        PATTERN __pycache__ EXCLUDE)
file(RELATIVE_PATH hycc_python_to_lib ${CMAKE_INSTALL_PREFIX}/${HYCC_INSTALL_PYTHONDIR}/hycc
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR})
string(REGEX REPLACE "/$" "" hycc_python_to_lib "${hycc_python_to_lib}")
file(WRITE ${CMAKE_BINARY_DIR}/generated/_installed.py
     "# Written by hycc's install: libhycc_c.so's directory, relative to this package.\n"
     "LIBRARY_DIR = \"${hycc_python_to_lib}\"\n")
install(FILES ${CMAKE_BINARY_DIR}/generated/_installed.py
        DESTINATION ${HYCC_INSTALL_PYTHONDIR}/hycc)
