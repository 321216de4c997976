"""Writes what a C++ extension of the running Python's PyTorch needs, as CMake settings, to the
file named by the first argument (cmake/TorchBackend.cmake includes it). Exits 1 without torch."""
import pathlib
import sys
import sysconfig

try:
    import torch
    from torch.utils import cpp_extension
except ImportError as e:
    print(f"no PyTorch in {sys.executable}: {e}", file=sys.stderr)
    sys.exit(1)


def cmake_list(values):
    return ";".join(str(v) for v in values)


lines = {
    "HYCC_TORCH_VERSION": torch.__version__,
    "HYCC_TORCH_INCLUDE_DIRS": cmake_list(cpp_extension.include_paths()),
    "HYCC_TORCH_LIBRARY_DIRS": cmake_list(cpp_extension.library_paths()),
    "HYCC_TORCH_CXX11_ABI": int(torch._C._GLIBCXX_USE_CXX11_ABI),
    "HYCC_TORCH_PYTHON_INCLUDE": sysconfig.get_paths()["include"],
    "HYCC_TORCH_EXT_SUFFIX": sysconfig.get_config_var("EXT_SUFFIX"),
}
# Whether this torch runs CUDA tensors (a CUDA build: c10_cuda beside its libraries).
has_c10_cuda = any((pathlib.Path(d) / "libc10_cuda.so").exists()
                   for d in cpp_extension.library_paths())
lines["HYCC_TORCH_CUDA"] = int(torch.version.cuda is not None and has_c10_cuda)
# The pybind11 ABI tags torch's own extensions are built with, where this torch names them.
abi_flags = getattr(cpp_extension, "_get_pybind11_abi_build_flags", lambda: [])()
lines["HYCC_TORCH_DEFINITIONS"] = cmake_list(f.removeprefix("-D") for f in abi_flags)
text = "".join(f'set({k} "{v}")\n' for k, v in lines.items())
pathlib.Path(sys.argv[1]).write_text(text)
