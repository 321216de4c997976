# The wheel of `pip install .` (pyproject.toml, scikit-build-core): the Python package comes from
# python/hycc (wheel.packages); these rules add, inside it, the two shared libraries that
# python/hycc/_lib.py looks for beside itself, and the tools as the environment's commands.
# libhycc_c.so is installed under its link name alone: a wheel cannot hold symbolic links, and
# the package loads it by path.
install(FILES $<TARGET_FILE:hycc_c> DESTINATION ${SKBUILD_PLATLIB_DIR}/hycc RENAME libhycc_c.so)
install(TARGETS hycc_mpi LIBRARY DESTINATION ${SKBUILD_PLATLIB_DIR}/hycc)
install(TARGETS hycc-bench hycc-sim hycc-train RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
