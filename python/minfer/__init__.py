"""minfer: a small ONNX inference runtime, with ONNX Runtime's Python API.

A script written for onnxruntime runs with minfer by changing its import::

    import minfer as onnxruntime

    sess = onnxruntime.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    (logits,) = sess.run(None, {name: x})

Beyond ONNX Runtime: ``InferenceSession.info()`` (placement, memory plan,
boundary copies), ``InferenceSession.stats()`` and ``Builder`` (a model built
in code). docs/python.md describes every class and what maps to what.
"""

import asyncio as _asyncio
import atexit as _atexit
import datetime as _datetime
import enum as _enum
import os as _os
import threading as _threading
import warnings as _warnings

import numpy as _np

from . import _minfer, capi  # noqa: F401  (capi: ORT's path to the exceptions)
from ._minfer import (  # noqa: F401  (re-exported: the exception classes)
    Busy,
    Cancelled,
    EPFail,
    Error,
    Fail,
    InvalidArgument,
    InvalidGraph,
    NoSuchFile,
    NotImplemented,
    RuntimeException,
)

from ._ortvalue import IOBinding, OrtValue  # noqa: E402

__version__ = _minfer.version()

# Sessions with requests in flight are closed before the interpreter stops:
# their workers call back into Python.
_atexit.register(_minfer._close_all)

# ---- Providers ----------------------------------------------------------------

# ONNX Runtime's names for minfer's providers, as sessions report them.
_ORT_NAMES = {
    "cpu": "CPUExecutionProvider",
    "onednn": "DnnlExecutionProvider",
    "opencl": "OpenCLExecutionProvider",
}
_MINFER_NAMES = {v: k for k, v in _ORT_NAMES.items()}

# What an ORT name asks for, in minfer's providers. ORT's CPUExecutionProvider
# is its fast CPU path: here the fastest CPU providers installed, oneDNN then
# the reference (which keeps its own name, "cpu", for when it is meant).
_ORT_REQUEST = {
    "CPUExecutionProvider": ("onednn", "cpu"),
    "DnnlExecutionProvider": ("onednn",),
    "OpenCLExecutionProvider": ("opencl",),
}

# The option keys each provider of minfer takes (docs/providers.md).
_PROVIDER_KEYS = {
    "cpu": (),
    "onednn": ("split",),
    "opencl": ("device", "cache", "fp16", "gemm", "kernel_copies"),
}

_warned = set()


def _warn_once(what, message):
    """One warning per process for each ignored option (what names it)."""
    if what in _warned:
        return
    _warned.add(what)
    # Reported at the user's line: the first caller outside this package.
    import sys

    here = _os.path.dirname(__file__)
    level, frame = 1, sys._getframe(1)
    while frame is not None and _os.path.dirname(frame.f_code.co_filename) == here:
        level, frame = level + 1, frame.f_back
    _warnings.warn(message, stacklevel=level)


def _ort_name(name):
    return _ORT_NAMES.get(name, name)


def _minfer_name(name):
    if not isinstance(name, str):
        raise TypeError("a provider name must be a str, not %s" % type(name).__name__)
    return _MINFER_NAMES.get(name, name)


def _options_string(options):
    """A provider's options dict as minfer's option string, "k=v,k=v"."""
    if isinstance(options, str):
        return options
    if not isinstance(options, dict):
        raise TypeError("provider options must be a dict or a str, not %s" % type(options).__name__)
    parts = []
    for key, value in options.items():
        if isinstance(value, bool):
            value = int(value)
        key, value = str(key), str(value)
        # The string has no escapes: a ',' would add a key, an '=' in a key
        # would split it elsewhere, a NUL would cut the string in C.
        if not key or any(c in key for c in ",=\0") or any(c in value for c in ",\0"):
            raise InvalidArgument(
                "provider option %r=%r: keys cannot be empty or hold ',', '=' or NUL, values "
                "cannot hold ',' or NUL (the options are passed as 'key=value,key=value')"
                % (key, value))
        parts.append("%s=%s" % (key, value))
    return ",".join(parts)


def _ort_provider_options(ort_name, names, options):
    """ORT-style options for an ORT-named provider, as {minfer name: dict}:
    each key goes to the providers of `names` that take it; use_arena=1 is
    what minfer always does; any other key is dropped with one warning
    naming it, so that an ORT option never fails a session or changes its
    providers."""
    if isinstance(options, str):
        options = dict(kv.split("=", 1) if "=" in kv else (kv, "") for kv in options.split(",") if kv)
    if not isinstance(options, dict):
        raise TypeError("provider options must be a dict or a str, not %s" % type(options).__name__)
    out = {n: {} for n in names}
    for key, value in options.items():
        takers = [n for n in names if key in _PROVIDER_KEYS.get(n, ())]
        for n in takers:
            out[n][key] = value
        if takers:
            continue
        if key == "use_arena" and str(value).lower() in ("1", "true"):
            continue  # minfer always plans each shape's memory into reused arenas
        _warn_once(
            ("provider_option", ort_name, key),
            "%s option %s=%r has no meaning in minfer and is ignored (the keys minfer's "
            "providers take: docs/providers.md)" % (ort_name, key, value),
        )
    return out


def _available():
    """The usable providers, each name once, in the order minfer finds them."""
    names = []
    for p in _minfer.provider_list():
        if p["usable"] and p["name"] not in names:
            names.append(p["name"])
    return names


def get_available_providers():
    """The providers that load here, with ONNX Runtime's names, in ORT's
    order: CPUExecutionProvider last, so that
    ``providers=get_available_providers()`` prefers the others as in ORT."""
    names = [_ort_name(n) for n in _available()]
    if "CPUExecutionProvider" in names:
        names.remove("CPUExecutionProvider")
        names.append("CPUExecutionProvider")
    return names


def get_all_providers():
    """Every provider name this package knows (available or not)."""
    return list(_ORT_NAMES.values())


def get_device():
    """'CPU': minfer's providers run on the host (OpenCL devices are chosen per provider)."""
    return "CPU"


def get_version_string():
    return __version__


def get_build_info():
    """As ORT's: the version, and where this package's libminfer comes from
    (a pip-built package records whether it carries its own libminfer,
    providers and plugins, or links an installed one)."""
    try:
        from ._build_info import BUILD_INFO
    except ImportError:
        return "minfer %s: the build tree's or the Debian package's libminfer (%s)" % (
            __version__, _minfer.__file__)
    return BUILD_INFO


def providers():
    """minfer's own view: every provider library found, with path, version and why not usable."""
    return _minfer.provider_list()


# ---- Options --------------------------------------------------------------------

# set_global_thread_pool_sizes' inter-op size: the default inter_op_num_threads of
# sessions on the global pool (0: as many as its threads).
_global_inter_op = 0


def set_global_thread_pool_sizes(intra_op_num_threads=0, inter_op_num_threads=0):
    """ONNX Runtime's global thread pools: sessions whose SessionOptions have
    use_per_session_threads = False share one pool of intra_op_num_threads threads
    (0: one per usable CPU) instead of making a pool each (minfer_thread_pool,
    docs/python.md). minfer's parallel scheduler runs on that same pool, so
    inter_op_num_threads is those sessions' default inter_op_num_threads (nodes at
    once, at most the pool's threads). A later call makes a new pool for sessions
    made after it; earlier sessions keep theirs."""
    global _global_inter_op
    for name, value in (("intra_op_num_threads", intra_op_num_threads),
                        ("inter_op_num_threads", inter_op_num_threads)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgument("set_global_thread_pool_sizes: %s %r: use an int >= 0" % (name, value))
    _minfer.set_global_thread_pool(intra_op_num_threads)
    _global_inter_op = inter_op_num_threads



class GraphOptimizationLevel(_enum.IntEnum):
    """ONNX Runtime's levels; ORT_ENABLE_ALL is minfer's level 3 (provider rewrites)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


def _minfer_level(level):
    level = int(level)
    if level == GraphOptimizationLevel.ORT_ENABLE_ALL:
        return 3
    if 0 <= level <= 3:
        return level
    raise InvalidArgument(
        "graph_optimization_level %d: use 0-3 or a GraphOptimizationLevel (ORT_ENABLE_ALL = 99)" % level
    )


class ExecutionMode(_enum.IntEnum):
    """ORT_PARALLEL is minfer's parallel scheduler (nodes that do not depend
    on each other at once, docs/scheduling.md); ORT_SEQUENTIAL, the default,
    leaves minfer's default (MINFER_SCHEDULER, else one node after another,
    each split over the session's pool). The session config entry
    "minfer.scheduler" wins over either."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


# ORT's log severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal.
# minfer's levels count the other way: 0 error, 1 warn, 2 info, 3 verbose.
_LOG_LEVELS = {0: 3, 1: 2, 2: 1, 3: 0, 4: 0}

# Session config entries minfer maps onto its own options (others are kept
# and answered by get_session_config_entry, as ONNX Runtime does).
_CONFIG_KEYS = {
    "minfer.planner": "planner",
    "minfer.scheduler": "scheduler",
    "minfer.inter_op_threads": "inter_op_threads",
    "minfer.queue_depth": "queue_depth",
    "minfer.micro_batch": "micro_batch",
    "minfer.plan_cache_size": "plan_cache_size",
    "minfer.strict_placement": "strict_placement",
    "minfer.check_nan": "check_nan",
    "minfer.precision": "precision",
    "minfer.creation_deadline_ms": "creation_deadline_ms",
}

# Session config entries that set minfer's resource limits (docs/reliability.md),
# each an integer; 0 keeps the default.
_LIMIT_KEYS = {
    "minfer.max_model_bytes": ("limits", "max_model_bytes"),
    "minfer.max_tensor_bytes": ("limits", "max_tensor_bytes"),
    "minfer.max_nodes": ("limits", "max_nodes"),
    "minfer.max_loop_iterations": ("limits", "max_loop_iterations"),
    "minfer.max_run_elements": ("run_limits", "max_run_elements"),
    "minfer.run_deadline_ms": ("run_limits", "deadline_ms"),
}

# ORT's session config entries that match what minfer does anyway, with the
# values that say so; another value (or another ORT key) has no meaning here
# and is warned about once, naming it.
_CONFIG_SAME = {
    "session.load_model_format": ("ONNX",),
    "session.save_model_format": ("ONNX",),
    "session.use_env_allocators": ("0",),
    "session.disable_prepacking": ("0",),
}

# SessionOptions fields whose default is what minfer always does: another
# value is warned about once (minfer plans each shape's memory into arenas
# it reuses, docs/memory.md).
_FIELD_DEFAULTS = {
    "enable_cpu_mem_arena": True,
    "enable_mem_pattern": True,
    "enable_mem_reuse": True,
    "use_deterministic_compute": False,
    "log_verbosity_level": 0,
    "logid": "",
}


class SessionOptions:
    """ONNX Runtime's SessionOptions. What each field does in minfer: docs/python.md."""

    def __init__(self):
        self.intra_op_num_threads = 0
        # False: run on the process's global pool (set_global_thread_pool_sizes,
        # made with one thread per CPU when not set), shared with every session so
        # made; intra_op_num_threads then is not used, as in ORT.
        self.use_per_session_threads = True
        # Nodes at once under the parallel scheduler (ORT_PARALLEL), stages
        # under the pipeline one; 0: as many as the pool's threads. Both run
        # on the session's one pool (intra_op_num_threads threads).
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling = False
        self.profile_file_prefix = "minfer_profile"
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        # Accepted for compatibility: minfer always plans memory per shape
        # into arenas and reuses them (docs/memory.md).
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self._config = {}
        self._dims = {}
        self._input_dims = []
        self._plugins = []

    def add_session_config_entry(self, key, value):
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidArgument("add_session_config_entry takes two str")
        self._config[key] = value

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise InvalidArgument("session config entry '%s' is not set" % key)
        return self._config[key]

    def register_custom_ops_library(self, path):
        """Loads a custom-op plugin (docs/plugins.md, as the C API's
        minfer_options_add_plugin and the CLI's --plugin): a path to the
        library, or a NAME found as libminfer_plugin_NAME.so in the plugin
        directories. It is loaded and checked now, so a missing file or a
        library that is no plugin raises here (NoSuchFile, InvalidArgument,
        ... with the file named); sessions made with these options then run
        its ops."""
        path = _os.fspath(path)
        _minfer.check_plugin(path)
        self._plugins.append(path)

    def add_free_dimension_override_by_name(self, name, value):
        """Every input dimension with the symbolic name `name` becomes `value`:
        get_inputs() shows it, the session plans for it at creation and runs
        take inputs of that size (minfer_options_set_dim). Creating the session
        fails when no input has such a dimension."""
        if not isinstance(name, str) or not name:
            raise InvalidArgument("add_free_dimension_override_by_name: the name must be a non-empty str")
        self._dims[name] = _dim_value(name, value)

    def add_free_dimension_override_by_denotation(self, denotation, value):
        raise NotImplemented(
            "add_free_dimension_override_by_denotation(%r): minfer does not read dimension "
            "denotations; use add_free_dimension_override_by_name" % (denotation,)
        )

    def add_input_dimension_override(self, input_name, axis, value):
        """minfer's own: axis `axis` of input `input_name` becomes `value`,
        symbolic or unnamed (minfer_options_set_input_dim)."""
        if not isinstance(input_name, str):
            raise InvalidArgument("add_input_dimension_override: the input name must be a str")
        self._input_dims.append((input_name, int(axis), _dim_value(input_name, value)))

    def _minfer_options(self):
        """The dict minfer._minfer.Session takes."""
        opts = {
            "threads": int(self.intra_op_num_threads),
            "optimization_level": _minfer_level(self.graph_optimization_level),
        }
        sev = int(self.log_severity_level)
        if sev not in _LOG_LEVELS:
            raise InvalidArgument("log_severity_level %d: use 0 (verbose) to 4 (fatal)" % sev)
        opts["log_level"] = _LOG_LEVELS[sev]
        if self.execution_mode not in (ExecutionMode.ORT_SEQUENTIAL, ExecutionMode.ORT_PARALLEL):
            raise InvalidArgument("execution_mode %r: use an ExecutionMode" % (self.execution_mode,))
        if self.execution_mode == ExecutionMode.ORT_PARALLEL:
            opts["scheduler"] = "parallel"
        inter = self.inter_op_num_threads
        if isinstance(inter, bool) or not isinstance(inter, int) or inter < 0:
            raise InvalidArgument("inter_op_num_threads %r: use an int >= 0 (0: the pool's threads)" % (inter,))
        if not self.use_per_session_threads:
            opts["global_thread_pool"] = True
            if inter == 0:
                inter = _global_inter_op
        if inter > 0:
            opts["inter_op_threads"] = inter
        # minfer's own config entries (below) win over the two ORT fields.
        for key, value in self._config.items():
            if key in _LIMIT_KEYS:
                group, field = _LIMIT_KEYS[key]
                opts.setdefault(group, {})[field] = _config_int(key, value, unsigned=True)
                continue
            name = _CONFIG_KEYS.get(key)
            if name is None:
                _check_ort_config_entry(key, value)
                continue
            opts[name] = value if name in ("planner", "scheduler", "precision") else _config_int(key, value)
        for field, default in _FIELD_DEFAULTS.items():
            value = getattr(self, field)
            if value != default:
                _warn_once(
                    ("session_option", field),
                    "SessionOptions.%s = %r has no effect in minfer, which ignores it (%s)"
                    % (field, value, "it always plans each shape's memory into arenas it reuses"
                       if field.startswith("enable_") else "docs/python.md"),
                )
        if self._plugins:
            opts["plugins"] = list(self._plugins)
        if self._dims:
            opts["dims"] = dict(self._dims)
        if self._input_dims:
            opts["input_dims"] = list(self._input_dims)
        return opts


def _check_ort_config_entry(key, value):
    """A config entry minfer does not map: a minfer.* key it does not know is
    an error (a misspelling), any other is kept for get_session_config_entry
    and warned about once unless its value is what minfer does anyway."""
    if key.startswith("minfer."):
        known = sorted(set(_CONFIG_KEYS) | set(_LIMIT_KEYS))
        raise InvalidArgument("session config entry '%s': minfer has no such key (its keys: %s)"
                              % (key, ", ".join(known)))
    if value in _CONFIG_SAME.get(key, ()):
        return
    _warn_once(
        ("config", key),
        "session config entry %s=%r has no meaning in minfer and is ignored" % (key, value),
    )


def _dim_value(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument("dimension override %r: the value must be an int >= 0, not %r" % (name, value))
    return value


def _config_int(key, value, unsigned=False):
    try:
        x = int(value)
    except ValueError:
        raise InvalidArgument("session config entry %s=%r: an integer is needed" % (key, value)) from None
    if unsigned and x < 0:
        raise InvalidArgument("session config entry %s=%r: use 0 (the default) or more" % (key, value))
    return x


class RunOptions:
    """ONNX Runtime's RunOptions over a live minfer_run_options.

    run_tag (also logid): the tag in the run's log messages and profile event.
    log_severity_level: ORT's 0 verbose .. 4 fatal for this run's messages
    (-1, the default: the session's). terminate: setting it True, from any
    thread, stops the runs using these options (they raise minfer.Fail) and
    every later run until it is set False again. deadline_ms (minfer's own):
    a run taking longer fails with minfer.Fail; 0 for none.
    Only terminate may change while a run uses the options."""

    def __init__(self):
        self._ro = _minfer.RunOptions()
        self._tag = ""
        self._severity = -1
        self._deadline_ms = 0
        self._terminate = False
        self.log_verbosity_level = 0
        self.only_execute_path_to_fetches = False
        self._config = {}

    @property
    def run_tag(self):
        return self._tag

    @run_tag.setter
    def run_tag(self, tag):
        if not isinstance(tag, str):
            raise InvalidArgument("run_tag must be a str, not %s" % type(tag).__name__)
        self._ro.set_tag(tag)
        self._tag = tag

    # ORT's Python name for the run tag.
    logid = run_tag

    @property
    def log_severity_level(self):
        return self._severity

    @log_severity_level.setter
    def log_severity_level(self, sev):
        sev = int(sev)
        if sev not in _LOG_LEVELS:
            if sev == -1 and self._severity == -1:
                return
            raise InvalidArgument(
                "log_severity_level %d: use 0 (verbose) to 4 (fatal); a RunOptions cannot go back "
                "to the session's level (-1) once set" % sev
            )
        self._ro.set_log_level(_LOG_LEVELS[sev])
        self._severity = sev

    @property
    def deadline_ms(self):
        return self._deadline_ms

    @deadline_ms.setter
    def deadline_ms(self, ms):
        ms = int(ms)
        if ms < 0:
            raise InvalidArgument("deadline_ms %d: use 0 (none) or more" % ms)
        self._ro.set_deadline_ms(ms)
        self._deadline_ms = ms

    @property
    def terminate(self):
        return self._terminate

    @terminate.setter
    def terminate(self, flag):
        flag = bool(flag)
        self._ro.terminate(flag)
        self._terminate = flag

    def add_run_config_entry(self, key, value):
        self._config[key] = value

    def get_run_config_entry(self, key):
        return self._config[key]


class ModelMetadata:
    """ONNX Runtime's ModelMetadata: what the model file says about itself."""

    __slots__ = ("producer_name", "producer_version", "graph_name", "domain", "description",
                 "graph_description", "version", "ir_version", "custom_metadata_map")

    def __init__(self, md):
        self.producer_name = md["producer_name"]
        self.producer_version = md["producer_version"]
        self.graph_name = md["graph_name"]
        self.domain = md["domain"]
        self.description = md["doc_string"]
        self.graph_description = md["graph_doc_string"]
        self.version = md["model_version"]
        self.ir_version = md["ir_version"]
        self.custom_metadata_map = md["metadata_props"]

    def __repr__(self):
        return "ModelMetadata(producer_name=%r, graph_name=%r, domain=%r, version=%r)" % (
            self.producer_name, self.graph_name, self.domain, self.version)


# ---- Sessions ---------------------------------------------------------------------


class NodeArg:
    """A graph input or output, as ONNX Runtime describes one."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, info):
        self.name = info["name"]
        if info["kind"] == "sequence":
            self.type = "seq(tensor(%s))" % info["dtype"]
        elif info["kind"] == "optional":
            inner = "tensor(%s)" % info["dtype"]
            if info["contained"] == "sequence":
                inner = "seq(%s)" % inner
            self.type = "optional(%s)" % inner
        else:
            self.type = "tensor(%s)" % info["dtype"]
        # ORT gives an undeclared rank as []; minfer's None says "unknown".
        self.shape = info["shape"] if info["shape"] is not None else []

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _apply_dim_overrides(args, dims):
    """Symbolic dimensions named in dims ({name: size}) become their sizes."""
    if not dims:
        return
    for a in args:
        if isinstance(a.shape, list):
            a.shape = [dims.get(d, d) if isinstance(d, str) else d for d in a.shape]


def _provider_request(providers, provider_options):
    """ORT's providers/provider_options arguments as (names, {name: options})."""
    if providers is None:
        return None, {}
    if isinstance(providers, str):
        providers = [providers]
    available = None
    names, options = [], {}
    for i, entry in enumerate(providers):
        opts = None
        if isinstance(entry, (tuple, list)):
            if len(entry) != 2:
                raise InvalidArgument("provider %r: use a name or a (name, options) pair" % (entry,))
            entry, opts = entry
        elif provider_options is not None and i < len(provider_options):
            opts = provider_options[i]
        if not isinstance(entry, str):
            raise TypeError("a provider name must be a str, not %s" % type(entry).__name__)
        if entry in _ORT_REQUEST:
            if available is None:
                available = _available()
            # The fast path's providers that are installed (the reference always is,
            # as a session falls back on it).
            wanted = [n for n in _ORT_REQUEST[entry] if n in available or n == "cpu"]
            if not wanted:
                _warnings.warn(
                    "Specified provider '%s' is not in available provider names. Available "
                    "providers: '%s'" % (entry, ", ".join(get_available_providers())),
                    stacklevel=3,
                )
                continue
            per = _ort_provider_options(entry, wanted, opts) if opts else {}
        elif entry.endswith("ExecutionProvider"):
            # As ONNX Runtime does for a provider it was not built with.
            _warnings.warn(
                "Specified provider '%s' is not in available provider names. Available providers: "
                "'%s'" % (entry, ", ".join(get_available_providers())),
                stacklevel=3,
            )
            continue
        else:
            # minfer's own name: its options go to the provider as they are.
            wanted = [entry]
            per = {entry: opts} if opts else {}
        for name in wanted:
            if name not in names:
                names.append(name)
            if per.get(name) and name not in options:
                options[name] = _options_string(per[name])
    # ONNX Runtime always falls back on its CPU provider; so does this.
    if "cpu" not in names:
        names.append("cpu")
    return names, options


class Request:
    """A run submitted with InferenceSession.submit, finishing on minfer's
    workers: a concurrent.futures.Future-like handle (docs/python.md).

    result(timeout=None) waits (the GIL released) and returns the outputs,
    or raises the request's own error (minfer.Cancelled when cancelled);
    done(), cancel(), exception(), add_done_callback(fn). In a coroutine,
    ``await request`` gives the outputs without blocking the event loop.
    """

    def __init__(self, output_index):
        self._r = None  # the _minfer.Request
        self._index = output_index  # which outputs, in which order; None: all
        self._event = _threading.Event()
        self._lock = _threading.Lock()
        self._callbacks = []
        self._finished_flag = False

    def _finished(self, r):
        """Called once, on a minfer worker with the GIL, when the request has finished."""
        self._r = r
        with self._lock:
            self._finished_flag = True
            callbacks, self._callbacks = self._callbacks, []
        self._event.set()
        for fn in callbacks:
            self._call(fn)

    def _call(self, fn):
        # A callback that raises must not stop the worker or the other
        # callbacks: its exception goes to sys.unraisablehook.
        try:
            fn(self)
        except BaseException as e:  # noqa: B036  (reported, as the worker cannot raise)
            _minfer._write_unraisable(e, fn)

    def done(self):
        """Whether the request has finished (succeeded, failed or was cancelled)."""
        return self._event.is_set()

    def cancel(self):
        """Asks the request to stop: queued, it ends cancelled without running;
        running, at its next node (one at its last node may still succeed).
        False when it had already finished."""
        if self._event.is_set():
            return False
        self._r.cancel()
        return True

    def cancelled(self):
        """Whether the request ended cancelled."""
        if not self._event.is_set():
            return False
        try:
            self._r.take()
        except Cancelled:
            return True
        except Exception:  # noqa: BLE001  (another error: not cancelled)
            return False
        return False

    def wait(self, timeout=None):
        """Waits until the request has finished (at most timeout seconds);
        True when it has."""
        return self._event.wait(timeout)

    def result(self, timeout=None):
        """The outputs (a list, as InferenceSession.run returns), waiting at
        most timeout seconds (TimeoutError past it); raises the request's
        error if it failed."""
        if not self._event.wait(timeout):
            raise TimeoutError("the request did not finish within %s s" % timeout)
        outs = self._r.take()
        if self._index is None:
            return list(outs)
        return [outs[i] for i in self._index]

    def exception(self, timeout=None):
        """The request's error, or None when it succeeded."""
        try:
            self.result(timeout)
        except TimeoutError:
            raise
        except Exception as e:  # noqa: BLE001
            return e
        return None

    def add_done_callback(self, fn):
        """fn(request) when it finishes: on a minfer worker thread, or at once
        here when it has already finished. Keep it short: requests finish one
        at a time in order, so a slow callback holds up the later ones."""
        with self._lock:
            if not self._finished_flag:
                self._callbacks.append(fn)
                return
        self._call(fn)

    def __await__(self):
        loop = _asyncio.get_running_loop()
        fut = loop.create_future()

        def settle(_):
            if fut.done():  # the awaiting task was cancelled
                return
            try:
                fut.set_result(self.result(0))
            except Exception as e:  # noqa: BLE001
                fut.set_exception(e)

        def on_done(req):
            try:
                loop.call_soon_threadsafe(settle, req)
            except RuntimeError:  # the loop is closed: nobody awaits any more
                pass

        def on_cancel(f):
            if f.cancelled():
                self.cancel()

        fut.add_done_callback(on_cancel)
        self.add_done_callback(on_done)
        return fut.__await__()


class InferenceSession:
    """ONNX Runtime's InferenceSession over a minfer session.

    path_or_bytes: a model file (str or os.PathLike), a serialized model
    (bytes), or a minfer.Builder. providers: names, minfer's ("onednn") or
    ORT's ("DnnlExecutionProvider"), or (name, options) pairs; None is
    minfer's default order (MINFER_PROVIDERS, else onednn,opencl,cpu).
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if kwargs:
            # ORT takes disabled_optimizers; a keyword minfer does not know is an error here.
            unknown = sorted(k for k in kwargs if k != "disabled_optimizers")
            if unknown:
                raise TypeError("InferenceSession got unexpected keyword arguments %s" % unknown)
            disabled = kwargs.get("disabled_optimizers") or []
            if disabled:
                _warn_once(
                    ("disabled_optimizers", tuple(sorted(disabled))),
                    "disabled_optimizers=%r: minfer's optimizer passes are not ORT's and are not "
                    "disabled one by one; ignored (graph_optimization_level chooses a level, "
                    "docs/optimizer.md)" % (sorted(disabled),),
                )
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        opts = self._sess_options._minfer_options()
        names, prov_opts = _provider_request(providers, provider_options)
        opts["providers"] = names
        opts["provider_options"] = prov_opts or None
        self._profile_path = None
        if self._sess_options.enable_profiling:
            stamp = _datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
            self._profile_path = "%s_%s.json" % (self._sess_options.profile_file_prefix, stamp)
            opts["profile"] = self._profile_path
        if isinstance(path_or_bytes, Builder):
            model = path_or_bytes._b
            self._model_path = None
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            model = path_or_bytes
            self._model_path = None
        else:
            model = _os.fspath(path_or_bytes)
            self._model_path = model
        self._sess = _minfer.Session(model, opts)
        if self._sess_options.optimized_model_filepath:
            self._write_optimized(path_or_bytes, model, opts["optimization_level"])
        self._provider_options = prov_opts
        self._inputs = [NodeArg(i) for i in self._sess.inputs()]
        self._outputs = [NodeArg(o) for o in self._sess.outputs()]
        _apply_dim_overrides(self._outputs, self._sess_options._dims)

    def _write_optimized(self, source, model, level):
        """SessionOptions.optimized_model_filepath: the model as minfer's
        optimizer leaves it at the session's level, written as ONNX (minfer
        loads and runs it with the same outputs; fused ops are in the
        'minfer' domain), as ORT writes it at creation."""
        out = _os.fspath(self._sess_options.optimized_model_filepath)
        if isinstance(source, Builder):
            _warn_once(("optimized_model_filepath", "builder"),
                       "optimized_model_filepath: a minfer.Builder graph has no model file to "
                       "optimize; nothing written")
            return
        if self._model_path is not None:
            _minfer.optimize_model(self._model_path, out, level)
            return
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".onnx") as f:
            f.write(bytes(model))
            f.flush()
            _minfer.optimize_model(f.name, out, level)

    # -- ONNX Runtime's methods --

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        """The graph outputs; a dimension named by a free-dimension override
        (SessionOptions.add_free_dimension_override_by_name) shows its value,
        as get_inputs() does."""
        return list(self._outputs)

    def get_overridable_initializers(self):
        """Always empty: minfer may fold initializers into constants, so none can be fed."""
        return []

    def get_providers(self):
        return [_ort_name(n) for n in self._sess.providers()]

    def get_provider_options(self):
        return {_ort_name(n): {} for n in self._sess.providers()} | {
            _ort_name(n): dict(kv.split("=", 1) for kv in s.split(",") if "=" in kv)
            for n, s in self._provider_options.items()
        }

    def get_session_options(self):
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        raise NotImplemented("set_providers: create a new InferenceSession with the providers instead")

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: a list with one value per name in output_names
        (every output when None or empty), numpy arrays for tensors, lists
        for sequences, None or the value for optionals."""
        if output_names is not None and len(output_names) == 0:
            output_names = None
        return self._run_into(output_names, input_feed, run_options, None)

    def _run_into(self, output_names, input_feed, run_options, bound, devices=None):
        """run(), with bound: per output None, a numpy array or a device value
        the run writes into; devices: per output None or the provider a new
        output stays on."""
        if run_options is None:
            ro = None
        elif isinstance(run_options, RunOptions):
            ro = run_options._ro
        else:
            raise TypeError("run_options must be a minfer.RunOptions, not %s" % type(run_options).__name__)
        if bound is None and devices is None:
            return self._sess.run(output_names, input_feed, ro)
        return self._sess.run(output_names, input_feed, ro, bound, devices)

    def io_binding(self):
        """ONNX Runtime's IOBinding for this session (run_with_iobinding)."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        """Runs with the binding's inputs and outputs: outputs bound to
        OrtValues or buffers are written into their memory; the binding's
        get_outputs() has every bound output afterwards."""
        if not isinstance(iobinding, IOBinding):
            raise TypeError("run_with_iobinding: iobinding must be an IOBinding, not %s"
                            % type(iobinding).__name__)
        if iobinding._session is not self:
            raise InvalidArgument("run_with_iobinding: the binding belongs to another session")
        iobinding._run(self, run_options)

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """run() with OrtValues in and out: {name: OrtValue} feeds (read in
        place), a list of OrtValues back, one per name (every output when
        None or empty)."""
        if not isinstance(input_dict_ort_values, dict):
            raise TypeError("run_with_ort_values: the inputs must be a dict of name: OrtValue")
        feed = {}
        for name, v in input_dict_ort_values.items():
            if not isinstance(v, OrtValue):
                raise TypeError("run_with_ort_values: input '%s' must be an OrtValue, not %s"
                                % (name, type(v).__name__))
            # a device value is read in place by a run of its session
            feed[name] = v._on_device(self._sess) if v._device is not None else v._value
        if output_names is not None and len(output_names) == 0:
            output_names = None
        values = self._run_into(output_names, feed, run_options, None)
        names = output_names if output_names is not None else [o.name for o in self._outputs]
        return [self._ortvalue(n, v) for n, v in zip(names, values)]

    def _ortvalue(self, name, value):
        """An output as an OrtValue, bfloat16 outputs (uint16 bits) typed as such."""
        bf16 = any(o.name == name and "bfloat16" in o.type for o in self._outputs)
        return OrtValue(value, 16 if bf16 and isinstance(value, _np.ndarray) else None)

    def get_modelmeta(self):
        """The model's producer, graph name, domain, doc strings, version and metadata_props."""
        return ModelMetadata(self._sess.metadata())

    def end_profiling(self):
        """Writes the profile recorded so far and returns its file name ('' when profiling is off)."""
        if self._profile_path is None:
            return ""
        self._sess.write_profile(self._profile_path)
        return self._profile_path

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """ONNX Runtime's run_async: submits the run and returns at once;
        callback(outputs, user_data, err) is called on a minfer worker
        thread when it finishes, with err "" on success, else the outputs
        None and err the message. minfer's submit() returns a Request
        instead."""
        if run_options is not None:
            raise InvalidArgument("run_async: run_options are not supported for asynchronous runs")
        if not callable(callback):
            raise TypeError("run_async: callback must be callable")

        def done(req):
            try:
                outs = req.result(0)
            except Exception as e:  # noqa: BLE001
                callback(None, user_data, str(e))
                return
            callback(outs, user_data, "")

        self.submit(input_feed, output_names, callback=done)

    # -- Beyond ONNX Runtime --

    def submit(self, input_feed, output_names=None, callback=None, block=True):
        """Submits a run to the session's workers (docs/scheduling.md) and
        returns a Request at once; the inputs are copied, so the arrays may
        change afterwards. callback(request), if given, is called on a minfer
        worker thread when it finishes. The queue is bounded
        (SessionOptions config "minfer.queue_depth"): when it is full submit
        waits, or with block=False raises minfer.Busy and submits nothing."""
        index = None
        if output_names:
            names = [o.name for o in self._outputs]
            index = []
            for n in output_names:
                if n not in names:
                    raise InvalidArgument("submit: '%s' is not an output of the model" % n)
                index.append(names.index(n))
        req = Request(index)
        if callback is not None:
            if not callable(callback):
                raise TypeError("submit: callback must be callable")
            req._callbacks.append(callback)
        req._r = self._sess.submit(input_feed, req._finished, block)
        return req

    async def arun(self, input_feed, output_names=None):
        """The run as a coroutine: ``outputs = await sess.arun(feed)`` submits
        it and waits without blocking the event loop (a full queue is waited
        for in a thread of the loop's executor)."""
        try:
            req = self.submit(input_feed, output_names, block=False)
        except Busy:
            loop = _asyncio.get_running_loop()
            req = await loop.run_in_executor(None, lambda: self.submit(input_feed, output_names))
        return await req

    def close(self):
        """Frees the session now: requests still queued or running end
        cancelled (their result() raises minfer.Cancelled). Later calls fail."""
        self._sess.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def info(self):
        """What minfer decided for this model: providers, each node's
        placement (and why earlier providers declined it), the scheduler
        (schedule: its name, inter_op_threads, and once a plan exists whether
        it runs nodes at once, or why not, and its arenas against the
        sequential order's), and, once a plan exists (after a run or
        prepare()), its memory figures, planned buffers and boundary copies
        per run."""
        memory = self._sess.memory()
        return {
            "providers": self._sess.providers(),
            "placement": self._sess.placement(),
            "schedule": self._sess.schedule(),
            "memory": memory,
            "boundary_copies": None
            if memory is None
            else {"per_run": memory["copies_per_run"], "bytes_per_run": memory["copy_bytes_per_run"]},
        }

    def prepare(self, input_feed):
        """Plans memory for these inputs' shapes without running (contents are not read)."""
        self._sess.prepare(input_feed)

    def thread_count(self):
        """Threads of the session's pool, the calling thread included."""
        return self._sess.thread_count()

    def stats(self):
        """Latency statistics of the runs since creation or reset_stats()."""
        return self._sess.stats()

    def reset_stats(self):
        self._sess.reset_stats()

    def node_profile(self, index):
        """With profiling on: (total_ms, runs, flops) of node `index` (execution order)."""
        return self._sess.node_profile(index)

    def write_dot(self, path):
        """The graph as Graphviz DOT, nodes coloured by provider."""
        self._sess.write_dot(_os.fspath(path))


# ---- Graph builder ----------------------------------------------------------------

_ELEM = {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
    "string": 8, "bool": 9, "float16": 10, "double": 11, "uint32": 12, "uint64": 13,
    "complex64": 14, "complex128": 15, "bfloat16": 16,
}
_ELEM["float32"] = 1
_ELEM["float64"] = 11


def _elem_type(dtype):
    if isinstance(dtype, int):
        return dtype
    if isinstance(dtype, str) and dtype.startswith("tensor(") and dtype.endswith(")"):
        dtype = dtype[7:-1]
    if isinstance(dtype, str) and dtype in _ELEM:
        return _ELEM[dtype]
    d = _np.dtype(dtype)
    if d.kind in "USO":
        return 8
    name = "bool" if d.kind == "b" else d.name
    if name not in _ELEM:
        raise InvalidArgument("dtype %r has no ONNX element type" % (dtype,))
    return _ELEM[name]


class Builder:
    """A model built in code (include/minfer/builder.h)::

        b = minfer.Builder(opset=13)
        b.add_input("x", "float", ["batch", 4])
        b.add_node("Relu", ["x"], ["y"])
        b.add_output("y")
        sess = b.session()                 # an InferenceSession
    """

    def __init__(self, opset=13):
        self._b = _minfer.Builder(opset)

    def add_opset(self, domain, version):
        self._b.add_opset(domain, version)
        return self

    def add_input(self, name, dtype, shape):
        """dtype: a numpy dtype, 'float', 'tensor(float)' or an ONNX type number;
        shape: ints, with a str (a symbolic name) or None for a dynamic dimension."""
        self._b.add_input(name, _elem_type(dtype), shape)
        return self

    def add_initializer(self, name, array):
        self._b.add_initializer(name, _np.asarray(array))
        return self

    def add_node(self, op_type, inputs, outputs, name=None, domain=None, **attrs):
        """Attributes by keyword, typed by value: int, float, str, a numpy
        array (a tensor), or a list of ints, floats or str. Returns the node's index."""
        index = self._b.add_node(op_type, list(inputs), list(outputs), name, domain)
        for key, value in attrs.items():
            self._b.set_attr(index, key, value)
        return index

    def add_output(self, name):
        self._b.add_output(name)
        return self

    def session(self, sess_options=None, providers=None, provider_options=None):
        """Validates the graph and returns an InferenceSession on it; the builder stays usable."""
        return InferenceSession(self, sess_options, providers, provider_options)


def load_tensor(path, kind="tensor"):
    """A .pb file of the ONNX test-case format (TensorProto, or SequenceProto/OptionalProto
    with kind 'sequence'/'optional') as a numpy array, list or None."""
    return _minfer.load_pb(_os.fspath(path), kind)[0]


def save_tensor(array, path, name=None):
    """Writes an array as a serialized TensorProto."""
    _minfer.save_pb(_np.asarray(array), name, _os.fspath(path))
