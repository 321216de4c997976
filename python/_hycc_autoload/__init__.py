"""The backend "hycc" for programs that never import hycc (docs/torch.md, "Autoload").

The installed package names `register` in the `torch.backends` entry-point group, which
`import torch` calls (unless TORCH_DEVICE_BACKEND_AUTOLOAD=0), so that a program whose backend
is only a string (`init_process_group("hycc")`, `--backend hycc`) runs on hycc unmodified. This
module stays apart from the hycc package so that `import torch` loads nothing of hycc's: the
backend module (hycc.torch, the C++ extension) loads when the first hycc group is made.
"""

_NAME = "hycc"


def register():
    """Registers the backend "hycc" with torch.distributed, its groups made by hycc.torch (not
    imported until then); nothing where torch has no distributed package or hycc.torch has
    registered the backend already."""
    import torch.distributed as dist

    if not dist.is_available() or _NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(_NAME, _create, devices=["cpu", "cuda"])


def _create(store, rank, size, timeout):
    import hycc.torch

    return hycc.torch._create(store, rank, size, timeout)
