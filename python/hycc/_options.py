"""What the host and device option structs share: keyword checks, codec, engine, sizes, seed,
tag, key, statistics and the argument check, and the reduction op."""
import ctypes

from ._codec import as_codec
from ._lib import CallStats, InvalidArgument

_COMMON = {"comm", "codec", "engine", "threshold", "segment", "seed", "tag", "key", "dtype",
           "stats", "pieces", "check_arguments"}
_OPS = {"sum": 0, "avg": 1, "average": 1}
_CHECKS = {"auto": 0, "always": 1, "never": 2}  # hycc_arg_check


def check_keywords(kw, own):
    """Refuses keywords outside the common ones and `own`: a misspelt keyword must not silently
    run uncompressed."""
    allowed = _COMMON | own
    unknown = set(kw) - allowed
    if unknown:
        raise TypeError(f"hycc: unknown keyword(s) {sorted(unknown)}; expected {sorted(allowed)}")


def fill_common(o, kw):
    """Sets the shared fields of an initialized hycc_options / hycc_device_options from kw;
    returns what the call must keep alive (the Codec, the pieces array)."""
    keep = []
    if kw.get("codec") is not None:
        keep.append(as_codec(kw["codec"]))
        o.codec = keep[-1].handle
    if kw.get("pieces") is not None:
        keep.append(pieces_array(kw["pieces"]))
        o.pieces, o.pieces_length = keep[-1], len(keep[-1])
    if kw.get("engine") is not None:
        o.engine = kw["engine"].handle
    if kw.get("threshold") is not None:
        o.threshold_bytes = kw["threshold"]
    if kw.get("segment") is not None:
        o.segment_bytes = kw["segment"]
    o.seed, o.tag, o.key = kw.get("seed", 0), kw.get("tag", 0), kw.get("key", 0)
    check_arguments = kw.get("check_arguments", "auto")
    if check_arguments not in _CHECKS:
        raise InvalidArgument(f"hycc: check_arguments {check_arguments!r} is not one of "
                              f"{sorted(_CHECKS)}")
    o.check_arguments = _CHECKS[check_arguments]
    if kw.get("stats") is not None:
        if not isinstance(kw["stats"], CallStats):
            raise InvalidArgument("hycc: stats must be a hycc.CallStats")
        o.stats = ctypes.pointer(kw["stats"])
    return keep


def pieces_array(shapes):
    """The shapes of a bucket's tensors (e.g. [p.shape for p in bucket.parameters()]) as
    hycc_options.pieces: per tensor its number of dimensions, then the dimensions."""
    flat = []
    for shape in shapes:
        dims = [int(d) for d in shape] or [1]  # a 0-d tensor: one element
        if any(d <= 0 for d in dims):
            raise InvalidArgument(f"hycc: pieces: shape {tuple(shape)!r} needs 1 or more positive "
                                  "dimensions")
        flat += [len(dims)] + dims
    return (ctypes.c_size_t * len(flat))(*flat)


def op_code(op):
    if op not in _OPS:
        raise InvalidArgument(f"hycc: op {op!r} is not one of {sorted(_OPS)}")
    return _OPS[op]
