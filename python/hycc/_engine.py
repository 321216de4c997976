"""The policy engine: a policy (preset or TOML file) applied by communicator name."""
import ctypes
import json

from ._arrays import comm_handle
from ._lib import check, lib


class Engine:
    """A PolicyEngine: policy is a preset ("baseline", "naive", "hybrid", "hybrid-mz",
    "hybrid-z", "auto") or a TOML file; None reads HYCC_POLICY. HYCC_LOG and HYCC_SAMPLE_ERROR apply.
    Name communicators after their dimension (comm.Set_name("dp"); tp, pp, zero, embedding)."""

    def __init__(self, policy=None):
        self._handle = ctypes.c_void_p()
        check(lib.hycc_engine_create(policy.encode() if policy else None,
                                     ctypes.byref(self._handle)))

    def __del__(self):
        self.close()

    def close(self):
        if getattr(self, "_handle", None):
            lib.hycc_engine_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def handle(self):
        return self._handle

    @property
    def policy_name(self):
        return lib.hycc_engine_policy_name(self._handle).decode()

    def stats(self, comm=None, local=False):
        """The statistics per dimension and operation ({"entries": [...], "total": {...}}):
        summed over comm (collective), or this rank's with local=True."""
        if local:
            from mpi4py import MPI
            comm = MPI.COMM_NULL  # MPI_COMM_NULL is not a NULL pointer in every MPI
        out = ctypes.c_void_p()
        check(lib.hycc_engine_stats_json(self._handle, comm_handle(comm), ctypes.byref(out)))
        try:
            return json.loads(ctypes.string_at(out).decode())
        finally:
            lib.hycc_free(out)

    def finish(self, comm=None):
        """The end of a run, collective: what HYCC_LOG asked for (summary, JSON file)."""
        check(lib.hycc_engine_finish(self._handle, comm_handle(comm)))

    def calibrate(self, comm=None):
        """Measures comm's links for the adaptive rules (auto), collective over comm: returns
        (latency in seconds, bandwidth in bytes per second)."""
        latency, bandwidth = ctypes.c_double(), ctypes.c_double()
        check(lib.hycc_engine_calibrate(self._handle, comm_handle(comm), ctypes.byref(latency),
                                        ctypes.byref(bandwidth)))
        return latency.value, bandwidth.value

    def save_state(self):
        """The state of every gradient compressor the engine made (error-feedback residuals,
        PowerSGD's Q, step counters; host and device) as bytes, for a checkpoint: an engine that
        loads them continues with the same bits. Call it between steps."""
        blob, size = ctypes.c_void_p(), ctypes.c_size_t()
        check(lib.hycc_engine_save_state(self._handle, ctypes.byref(blob), ctypes.byref(size)))
        try:
            return ctypes.string_at(blob, size.value)
        finally:
            lib.hycc_free(blob)

    def load_state(self, state, backend="cuda", stream=None):
        """Replaces the compressors' state by saved bytes (save_state); device compressors load
        onto backend ("cuda", or "emulation") and stream. hycc.CorruptStream for damaged bytes,
        and nothing is loaded then."""
        from ._device import _options
        o, _keep = _options({"backend": backend, "stream": stream})
        check(lib.hycc_engine_load_state(self._handle, bytes(state), len(state), ctypes.byref(o)))

    def set_link(self, latency, bandwidth, comm=None):
        """Sets comm's link figures (seconds per message, bytes per second) instead of measuring
        them; give every rank the same figures."""
        check(lib.hycc_engine_set_link(self._handle, comm_handle(comm), float(latency),
                                       float(bandwidth)))
