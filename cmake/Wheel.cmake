# The wheel of `pip install .` (pyproject.toml, scikit-build-core): the Python package comes from
# python/hycc (wheel.packages); these rules add, inside it, the two shared libraries that
# python/hycc/_lib.py looks for beside itself, the torch backend's module when the building
# Python has torch (python/hycc/torch looks for it there), and the tools as the environment's
# commands. The target hycc_wheel (pyproject.toml's build.targets) builds them all.
# libhycc_c.so is installed under its link name alone: a wheel cannot hold symbolic links, and
# the package loads it by path.
install(FILES $<TARGET_FILE:hycc_c> DESTINATION ${SKBUILD_PLATLIB_DIR}/hycc RENAME libhycc_c.so)
install(TARGETS hycc_mpi LIBRARY DESTINATION ${SKBUILD_PLATLIB_DIR}/hycc)
install(TARGETS hycc-bench hycc-sim hycc-train RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
add_custom_target(hycc_wheel)
add_dependencies(hycc_wheel hycc_c hycc_mpi hycc-bench hycc-sim hycc-train)
if(HYCC_HAVE_TORCH)
  add_dependencies(hycc_wheel hycc_torch)
  install(TARGETS hycc_torch LIBRARY DESTINATION ${SKBUILD_PLATLIB_DIR}/hycc)
endif()
