"""python3 -m minfer: the `minfer` command line, the same program.

It runs the minfer CLI that goes with this package, with every command and
option (test, run, info, bench, providers, plugins, optimize, compile;
--dim, --shape, --json, ...; `minfer --help`, README.md "The minfer command"), its output and
exit codes: the one the package carries (a pip install from a build
directory: minfer/bin/minfer, run against the package's libminfer), the
build tree's (build/tools/minfer beside build/python), else `minfer` on PATH
(the Debian package minfer-tools). Without any of them it falls back on the
Python commands below (another command says why it is missing):

    python3 -m minfer run MODEL [--inputs DIR] [--outputs DIR] [--providers LIST]
    python3 -m minfer bench MODEL [--runs N] [--warmup N] [--providers LIST] [--threads N]
    python3 -m minfer info MODEL [--providers LIST]

Inputs come from DIR/input_K.pb (the ONNX test-case layout) or, without
--inputs, are random, with every dynamic dimension 1. Exit status: 0 on
success, 1 on a failure (one line on stderr), 2 on a usage error.
"""

import argparse
import os
import shutil
import sys
import time

import numpy as np

import minfer

_NP_TYPES = {
    "float": np.float32, "double": np.float64, "float16": np.float16, "bfloat16": np.uint16,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128,
}


def _random_input(arg, rng):
    """A random value for a NodeArg: dynamic dimensions are 1."""
    if not arg.type.startswith("tensor("):
        raise minfer.InvalidArgument("input '%s' of type %s: give it with --inputs" % (arg.name, arg.type))
    elem = arg.type[len("tensor("):-1]
    shape = [d if isinstance(d, int) and d >= 0 else 1 for d in arg.shape]
    if elem == "string":
        return np.array(["x"] * int(np.prod(shape)), dtype=object).reshape(shape)
    dtype = _NP_TYPES[elem]
    if np.issubdtype(dtype, np.floating):
        return rng.random(shape).astype(dtype)
    if dtype is np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(0, 4, size=shape).astype(dtype)


def _inputs(sess, directory, rng):
    feed = {}
    for k, arg in enumerate(sess.get_inputs()):
        if directory is None:
            feed[arg.name] = _random_input(arg, rng)
            continue
        kind = "sequence" if arg.type.startswith("seq(") else "optional" if arg.type.startswith("optional(") else "tensor"
        path = os.path.join(directory, "input_%d.pb" % k)
        feed[arg.name] = minfer.load_tensor(path, kind)
    return feed


def _session(args):
    opts = minfer.SessionOptions()
    opts.intra_op_num_threads = getattr(args, "threads", 0)
    providers = args.providers.split(",") if args.providers else None
    return minfer.InferenceSession(args.model, opts, providers=providers)


def _describe(value):
    if isinstance(value, np.ndarray):
        return "%s %s" % (value.dtype, list(value.shape))
    if isinstance(value, list):
        return "sequence of %d" % len(value)
    return "empty optional"


def cmd_run(args):
    sess = _session(args)
    feed = _inputs(sess, args.inputs, np.random.default_rng(0))
    outputs = sess.run(None, feed)
    if args.outputs:
        os.makedirs(args.outputs, exist_ok=True)
    for k, (arg, value) in enumerate(zip(sess.get_outputs(), outputs)):
        print("%s: %s" % (arg.name, _describe(value)))
        if args.outputs:
            if not isinstance(value, np.ndarray):
                raise minfer.NotImplemented("output '%s': only tensors are written as .pb" % arg.name)
            minfer.save_tensor(value, os.path.join(args.outputs, "output_%d.pb" % k), arg.name)
    return 0


def cmd_bench(args):
    sess = _session(args)
    feed = _inputs(sess, args.inputs, np.random.default_rng(0))
    for _ in range(args.warmup):
        sess.run(None, feed)
    sess.reset_stats()
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    st = sess.stats()
    print("model: %s" % args.model)
    print("providers: %s" % ",".join(sess.info()["providers"]))
    print("runs: %d (after %d warm-up)" % (args.runs, args.warmup))
    print("python run, ms: median %.4f  min %.4f  mean %.4f" % (times[len(times) // 2], times[0], sum(times) / len(times)))
    print("library run, ms: median %.4f  min %.4f  mean %.4f" % (st["p50_ms"], st["min_ms"], st["mean_ms"]))
    return 0


def cmd_info(args):
    sess = _session(args)
    sess.prepare(_inputs(sess, None, np.random.default_rng(0)))
    info = sess.info()
    print("model: %s" % args.model)
    print("providers: %s" % ",".join(info["providers"]))
    for title, args_ in (("inputs", sess.get_inputs()), ("outputs", sess.get_outputs())):
        print("%s:" % title)
        for a in args_:
            print("  %s %s %s" % (a.name, a.type, a.shape))
    print("nodes: %d" % len(info["placement"]))
    counts = {}
    for p in info["placement"]:
        counts[p["provider"]] = counts.get(p["provider"], 0) + 1
    for name, n in sorted(counts.items()):
        print("  %s: %d" % (name, n))
    m = info["memory"]
    print("memory (dynamic dimensions at 1): arena %d bytes, lower bound %d, constants %d, %d buffers"
          % (m["arena_bytes"], m["lower_bound_bytes"], m["constant_bytes"], m["planned_tensors"]))
    print("boundary copies per run: %d (%d bytes)" % (info["boundary_copies"]["per_run"], info["boundary_copies"]["bytes_per_run"]))
    return 0


def _cli():
    """The minfer CLI for this package and the environment to run it in, or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    bundled = os.path.join(here, "bin", "minfer")
    if os.access(bundled, os.X_OK):
        # Its libminfer is the package's (minfer/libminfer.so.0), with its providers and plugins.
        env["LD_LIBRARY_PATH"] = here + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        return bundled, env
    build_tree = os.path.join(os.path.dirname(os.path.dirname(here)), "tools", "minfer")
    if os.path.basename(os.path.dirname(here)) == "python" and os.access(build_tree, os.X_OK):
        return build_tree, env
    on_path = shutil.which("minfer")
    if on_path:
        return on_path, env
    return None, env


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    cli, env = _cli()
    if cli is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        # Python ignores SIGPIPE, and an ignored signal stays ignored across
        # exec: give the CLI the default a shell gives it, so that a reader
        # that goes away (| head) ends it quietly.
        import signal

        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.execve(cli, ["minfer", *argv], env)
    if not argv or argv[0] not in ("run", "bench", "info"):
        print("python3 -m minfer: the minfer CLI is not installed (the Debian package minfer-tools, or "
              "pip install from a build directory, carries it): Python's run, bench and info only",
              file=sys.stderr)
    return python_main(argv)


def python_main(argv=None):
    """The Python commands (run, bench, info) for when no CLI is installed."""
    try:
        code = _python_main(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # A reader that went away (| head) is not an error to report.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _python_main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m minfer", description="minfer from Python")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("model")
        p.add_argument("--providers", help="comma-separated, minfer's or ONNX Runtime's names")

    p = sub.add_parser("run", help="run a model once")
    common(p)
    p.add_argument("--inputs", help="directory of input_K.pb files")
    p.add_argument("--outputs", help="directory to write output_K.pb files to")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("bench", help="time runs from Python")
    common(p)
    p.add_argument("--inputs", help="directory of input_K.pb files")
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--threads", type=int, default=0)
    p.set_defaults(fn=cmd_bench)
    p = sub.add_parser("info", help="inputs, outputs, placement, memory plan")
    common(p)
    p.set_defaults(fn=cmd_info)
    args = parser.parse_args(argv)
    if getattr(args, "runs", 1) < 1 or getattr(args, "warmup", 0) < 0:
        parser.error("--runs must be at least 1 and --warmup at least 0")
    try:
        return args.fn(args)
    except BrokenPipeError:
        raise  # python_main: a reader that went away is no failure to report
    except (minfer.Error, OSError) as e:
        print("minfer %s: %s" % (args.command, e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
