"""hycc as a torch.distributed backend (docs/torch.md).

    import torch.distributed as dist
    import hycc.torch                      # registers the backend "hycc"
    dist.init_process_group("hycc")        # or "cpu:hycc,cuda:hycc"; new_group(backend="hycc")

Under the group, hycc compresses what its policy says (HYCC_POLICY: a preset such as hybrid, or
a TOML file; baseline compresses nothing): allreduce (SUM, AVG, PREMUL_SUM),
reduce_scatter_tensor, all_gather_into_tensor and list all_gather, broadcast and
all_to_all_single with even splits, on float32, bfloat16 and float16 CPU and CUDA tensors (CUDA:
hycc's device collectives, over NCCL where each rank has a GPU of its own). Everything else goes
unchanged to a gloo backend (CPU tensors) or an NCCL backend (CUDA tensors) on the same ranks. Which parallel dimension a group carries
(dp, tp, pp, zero, embedding) comes from its description (Megatron-core's group names,
DeviceMesh dimension names; the default group is dp) or from set_dimension().
"""
import atexit
import importlib.machinery
import json
import math
import importlib.util
import os
import pathlib
import sysconfig
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.optim.optimizer import register_optimizer_step_post_hook

__all__ = ["BACKEND", "register_ddp", "set_dimension", "dimension", "dimension_from_description", "set_policy",
           "policy_name", "statistics", "gradient_states", "state_dict", "load_state_dict"]

BACKEND = "hycc"
_MODULE = "_hycc_torch"


def _candidates():
    name = _MODULE + sysconfig.get_config_var("EXT_SUFFIX")
    if os.environ.get("HYCC_TORCH_EXTENSION"):
        yield pathlib.Path(os.environ["HYCC_TORCH_EXTENSION"])
    here = pathlib.Path(__file__).resolve().parent
    yield here.parent / name  # an installed package
    yield here.parent.parent.parent / "build" / "lib" / name  # a source checkout


def _load():
    tried = []
    for path in _candidates():
        if not path.exists():
            tried.append(str(path))
            continue
        loader = importlib.machinery.ExtensionFileLoader(_MODULE, str(path))
        spec = importlib.util.spec_from_file_location(_MODULE, str(path), loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        return module
    raise ImportError(
        f"hycc.torch: the backend module {_MODULE} was not built for torch {torch.__version__}; "
        "build it against this environment's torch with `pip install --no-build-isolation .` "
        "from hycc's source, or configure a CMake build with -DHYCC_VENV=<this environment> "
        "(docs/torch.md), or set HYCC_TORCH_EXTENSION. Tried: " + "; ".join(tried))


_ext = _load()


def _gloo_devices():
    """The network devices of a gloo group, as torch makes them (GLOO_SOCKET_IFNAME: one per
    interface named; otherwise the host name's address)."""
    names = [n for n in os.environ.get("GLOO_SOCKET_IFNAME", "").split(",") if n]
    if names:
        return [dist.ProcessGroupGloo.create_device(interface=n) for n in names]
    return [dist.ProcessGroupGloo.create_default_device()]


def _create(store, rank, size, timeout):
    """The backend of one process group: hycc over four gloo backends of the same ranks, one
    for the calls hycc leaves (inner, with gloo's own worker threads), three for hycc's own
    traffic (its reductions and its gathers, which run side by side, and its compressed point
    to point; point to point only, so one worker thread each). They share their network
    devices: each device is an event-loop thread, and one each cost a third of the step time of
    an FSDP2 x TP model on the emulated cluster (docs/results.md, "The torch backend's own
    cost")."""
    if not isinstance(timeout, timedelta):
        timeout = timedelta(seconds=float(timeout))
    devices = _gloo_devices()

    def gloo(prefix, threads):
        options = dist.ProcessGroupGloo._Options()
        options._devices = devices
        options._threads = threads
        options._timeout = timeout
        return dist.ProcessGroupGloo(dist.PrefixStore(prefix, store), rank, size, options)

    return _ext.create_backend(gloo("hycc/inner", 2 * len(devices)), gloo("hycc/reductions", 1),
                               gloo("hycc/gathers", 1), gloo("hycc/p2p", 1),
                               _nccl(store, rank, size, timeout))


def _nccl(store, rank, size, timeout):
    """NCCL for the CUDA calls hycc leaves, where this process has a GPU (torch makes one backend
    for both devices of "hycc" and "cpu:hycc,cuda:hycc"); None otherwise."""
    if not (_ext.cuda_built() and torch.cuda.is_available() and dist.is_nccl_available()):
        return None
    options = dist.ProcessGroupNCCL.Options()
    options._timeout = timeout
    return dist.ProcessGroupNCCL(dist.PrefixStore("hycc/nccl", store), rank, size, options)


if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])

# Seconds the interpreter's exit waits for hycc's threads to finish the calls they run.
_QUIESCE_S = 5.0


@atexit.register
def _quiesce():
    """Before Python finalizes: hycc's threads finish their calls and drop the tensors they hold
    (a thread that drops a tensor Python also holds takes the GIL, and Python 3.11 ends a thread
    that asks for it during finalization in a way that aborts the process: docs/torch.md,
    "Faults"). Immediate when no call is in flight; at most _QUIESCE_S otherwise."""
    _ext.quiesce(_QUIESCE_S)


def _backend(group):
    group = group if group is not None else dist.group.WORLD
    if group is None:
        raise ValueError("hycc.torch: no process group: call init_process_group first")
    if group is dist.GroupMember.NON_GROUP_MEMBER:
        raise ValueError("hycc.torch: this rank is not a member of the group")
    if not isinstance(group, dist.ProcessGroup):
        raise ValueError(f"hycc.torch: {group!r} is not a process group")
    try:
        return group._get_backend(torch.device("cpu"))
    except RuntimeError as e:
        raise ValueError(f"hycc.torch: the group has no CPU backend: {e}") from None


def register_ddp(ddp, group=None):
    """Gives hycc the shapes of the tensors in a DistributedDataParallel model's gradient buckets
    (a backend otherwise sees each bucket as one flat tensor), so that a PowerSGD rule on its
    allreduce compresses each weight matrix, as PyTorch's powerSGD_hook does, instead of the
    bucket's square view (docs/torch.md, "DDP and PowerSGD"). Registers a DDP communication hook
    that averages each bucket on `group` (the model's process group; default the default group)
    after naming its shapes, as PyTorch's default_hooks.allreduce_hook does (divided by the
    group's size, then summed: under baseline that hook's bits on gloo); call it where a program registers a hook, before the
    first backward. Other rules than PowerSGD compress as without it."""
    backend = _backend(group)
    ddp.register_comm_hook(group, lambda state, bucket: _bucket_allreduce(backend, group, bucket))


def _bucket_allreduce(backend, group, bucket):
    buf = bucket.buffer()
    shapes = [list(g.shape) or [1] for g in bucket.gradients()]
    if shapes and sum(math.prod(s) for s in shapes) == buf.numel():
        _ext.set_bucket_shapes(backend, buf, shapes)
    buf.div_(dist.get_world_size(group))
    work = dist.all_reduce(buf, group=group, async_op=True)
    return work.get_future().then(lambda f: f.value()[0])


def set_dimension(group, dimension):
    """Names the parallel dimension of `group`'s calls ("dp", "tp", "pp", "zero", "embedding",
    or "" for none) before its first call; it overrides the group's description."""
    _ext.set_dimension(_backend(group), dimension)


def dimension(group=None):
    """The dimension `group`'s calls take ("" before the first call, unless set)."""
    return _ext.dimension(_backend(group))


def dimension_from_description(description):
    """The dimension a process group description names ("" for none)."""
    return _ext.dimension_from_description(description)


def set_policy(preset_or_path):
    """The policy of every hycc group of this process, before the first call (instead of
    HYCC_POLICY)."""
    _ext.set_policy(preset_or_path)


def policy_name():
    return _ext.policy_name()


def statistics():
    """This rank's statistics of the calls its hycc groups ran, per dimension and operation
    (calls, compressed calls, bytes before and on the wire, times), as a dict. HYCC_LOG=summary
    prints all ranks' at destroy_process_group()."""
    return json.loads(_ext.statistics_json())


def gradient_states():
    """What this rank's gradient compressors hold: {"tensors": states, "host_bytes": their
    memory, "dropped": states dropped because their buffer came to hold another tensor}."""
    return dict(_ext.gradient_states())


_STATE_FORMAT = "hycc.torch gradient states 1"


def state_dict():
    """This rank's error-feedback states, to save with a checkpoint (each rank its own) and give
    back to load_state_dict() when the run resumes. A call's state is keyed by its place in the
    step (its group, operation, size and order since the last optimizer step), so a resumed run
    of the same program finds it again."""
    return {"format": _STATE_FORMAT, "policy": policy_name(), "states": _ext.save_state()}


def load_state_dict(state):
    """Replaces this rank's error-feedback states by a checkpoint's (state_dict() of the same
    rank). Raises ValueError for something that is not such a state or was saved under another
    policy."""
    if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
        raise ValueError("hycc.torch.load_state_dict: not a hycc.torch.state_dict()")
    if state.get("policy") != policy_name():
        raise ValueError(f"hycc.torch.load_state_dict: saved under policy '{state.get('policy')}',"
                         f" running '{policy_name()}'")
    _ext.load_state(state["states"])
    # The loaded states are keyed by place in the step: the calls from now on are keyed so too.
    _ext.count_optimizer_step()


def _count_step(optimizer, args, kwargs):
    _ext.count_optimizer_step()


# Every torch.optim optimizer's step ends a step for the gradient states' keys.
register_optimizer_step_post_hook(_count_step)
