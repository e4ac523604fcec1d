# On the device machine: minfer bench (subprocess, --json) against ONNX
# Runtime (in process), alternating rounds; prints tables, appends jsonl.
import json, os, subprocess, sys, time, statistics
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
M = os.environ["M"]; root = sys.argv[1]; deadline = float(sys.argv[2]); sections = sys.argv[3].split(",")
jl = open(os.path.join(os.environ.get("OUT", "/tmp"), "bench.jsonl"), "a")
def left(): return deadline - time.time()
def rec(**k): jl.write(json.dumps(k) + "\n"); jl.flush()

def mb(case, prov, th, runs, sched="sequential", conc=1, warm=3, env=None):
    c = os.path.join(root, case)
    cmd = [M, "--scheduler", sched, "bench", c + "/model.onnx", "--providers", prov, "--threads", str(th),
           "--runs", str(runs), "--warmup", str(warm), "--inputs", c + "/test_data_set_0", "--json"]
    if conc > 1: cmd += ["--concurrency", str(conc)]
    e = dict(os.environ); e.update(env or {})
    try: r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=min(120, max(5, left())))
    except subprocess.TimeoutExpired: print("  timeout", case, prov, th, sched, conc, flush=True); return None
    if r.returncode: print("  FAIL", case, prov, sched, r.stderr.strip()[-400:], flush=True); return None
    d = json.loads(r.stdout)
    v = d["runs_per_s"] if conc > 1 else d["median_ms"]
    rec(kind="minfer", case=case, prov=prov, threads=th, sched=sched, conc=conc, value=v,
        providers=d.get("providers"), create_ms=d.get("create_ms"), rss=d.get("peak_rss_bytes"),
        counters=d.get("device_counters"))
    return v

def ob(case, th, runs, warm=3):
    c = os.path.join(root, case)
    so = ort.SessionOptions(); so.intra_op_num_threads = th; so.inter_op_num_threads = 1
    s = ort.InferenceSession(c + "/model.onnx", so, providers=["CPUExecutionProvider"])
    feeds = {}
    for k, inp in enumerate(s.get_inputs()):
        tp = onnx.TensorProto()
        with open(c + "/test_data_set_0/input_%d.pb" % k, "rb") as f: tp.ParseFromString(f.read())
        feeds[inp.name] = numpy_helper.to_array(tp)
    for _ in range(warm): s.run(None, feeds)
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); s.run(None, feeds); ts.append((time.perf_counter() - t) * 1e3)
    del s
    v = statistics.median(ts); rec(kind="ort", case=case, threads=th, value=v); return v

def rng(xs):
    xs = [x for x in xs if x is not None]
    return "%.3f-%.3f" % (min(xs), max(xs)) if xs else "n/a"
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

if "pipe_gpu" in sections:
    print("## pipeline on opencl,cpu (GPU), --threads 2: runs/s", flush=True)
    for case in ["squeezenet1_1", "resnet18", "mobilenet_v2"]:
        res = {"seq1": [], "seq4": [], "pipe4": []}
        for r in range(2):
            if left() < 30: break
            res["seq1"].append(1e3 / (mb(case, "opencl,cpu", 2, 200, warm=5) or float("inf")))
            res["seq4"].append(mb(case, "opencl,cpu", 2, 50, conc=4, warm=5))
            res["pipe4"].append(mb(case, "opencl,cpu", 2, 50, sched="pipeline", conc=4, warm=5))
        print("%-16s seq c1 %s  seq c4 %s  pipeline c4 %s  pipe/seq4 %s" % (case, rng(res["seq1"]), rng(res["seq4"]),
              rng(res["pipe4"]), ("%.2f" % (med(res["pipe4"]) / med(res["seq4"]))) if med(res["pipe4"]) and med(res["seq4"]) else "n/a"), flush=True)

if "gpu" in sections:
    print("## median ms: opencl,cpu (GPU) | onednn,cpu 16t | ORT 16t", flush=True)
    for case in sorted(os.listdir(root)):
        if left() < 40: print("  (deadline: stopped)"); break
        a, b, o = [], [], []
        for r in range(2):
            a.append(mb(case, "opencl,cpu", 16, 30)); b.append(mb(case, "onednn,cpu", 16, 30)); o.append(ob(case, 16, 30))
        print("%-28s opencl %s | onednn %s | ORT %s | onednn/ORT %s" % (case, rng(a), rng(b), rng(o),
              ("%.2f" % (med(b) / med(o))) if med(b) and med(o) else "n/a"), flush=True)

if "sched" in sections:
    print("## schedulers, onednn,cpu: median ms sequential | parallel (2 rounds)", flush=True)
    for case in ["googlenet_op13", "inception_v3_op13", "resnet18"]:
        for th in [2, 4, 8, 16]:
            if left() < 20: break
            s, p = [], []
            for r in range(2):
                s.append(mb(case, "onednn,cpu", th, 40)); p.append(mb(case, "onednn,cpu", th, 40, sched="parallel"))
            print("%-20s %2dt seq %s | par %s | par/seq %s" % (case, th, rng(s), rng(p),
                  ("%.2f" % (med(p) / med(s))) if med(p) and med(s) else "n/a"), flush=True)

if "pipe_cpu" in sections:
    print("## pipeline on onednn,cpu, squeezenet1_1: runs/s", flush=True)
    for th in [2, 4, 16]:
        if left() < 20: break
        s1, s4, p4 = [], [], []
        for r in range(2):
            s1.append(1e3 / (mb("squeezenet1_1", "onednn,cpu", th, 200, warm=5) or float("inf")))
            s4.append(mb("squeezenet1_1", "onednn,cpu", th, 50, conc=4, warm=5))
            p4.append(mb("squeezenet1_1", "onednn,cpu", th, 50, sched="pipeline", conc=4, warm=5))
        print("%2dt seq c1 %s  seq c4 %s  pipeline c4 %s" % (th, rng(s1), rng(s4), rng(p4)), flush=True)

if "t16" in sections:
    print("## onednn,cpu at 8/16 threads: median ms (2 rounds)", flush=True)
    cfgs = [("auto16", 16, {}), ("off16", 16, {"MINFER_ONEDNN_SPLIT": "off"}),
            ("off16act", 16, {"MINFER_ONEDNN_SPLIT": "off", "OMP_WAIT_POLICY": "active"}),
            ("auto8", 8, {}), ("off8", 8, {"MINFER_ONEDNN_SPLIT": "off"})]
    for case in ["resnet18", "squeezenet1_1", "mobilenet_v2", "googlenet_op13", "inception_v3_op13",
                 "densenet121_op13", "efficientnet_b0_op13"]:
        if left() < 30: print("  (deadline: stopped)"); break
        res = {k: [] for k, _, _ in cfgs}; o16, o8 = [], []
        for r in range(2):
            for k, th, env in cfgs: res[k].append(mb(case, "onednn,cpu", th, 30, env=env))
            o16.append(ob(case, 16, 30)); o8.append(ob(case, 8, 30))
        print("%-20s " % case + " ".join("%s %s" % (k, rng(v)) for k, v in res.items()) +
              " | ORT16 %s ORT8 %s" % (rng(o16), rng(o8)), flush=True)

if "tsweep" in sections:
    print("## onednn,cpu by threads: median ms (1 round, alternating configs)", flush=True)
    cfgs = [("auto", {}), ("auto_act", {"OMP_WAIT_POLICY": "active"}),
            ("off_act", {"MINFER_ONEDNN_SPLIT": "off", "OMP_WAIT_POLICY": "active"}),
            ("off_dflt", {"MINFER_ONEDNN_SPLIT": "off", "OMP_WAIT_POLICY": "default"})]
    for th in [4, 8, 16]:
        for case in ["resnet18", "squeezenet1_1", "mobilenet_v2", "googlenet_op13", "inception_v3_op13",
                     "densenet121_op13", "efficientnet_b0_op13"]:
            if left() < 10: print("  (deadline: stopped)"); break
            res = [(k, mb(case, "onednn,cpu", th, 30, env=env)) for k, env in cfgs]
            o = ob(case, th, 30)
            print("%2dt %-20s " % (th, case) + " ".join("%s %.3f" % (k, v) if v else "%s n/a" % k for k, v in res) +
                  " | ORT %.3f" % o, flush=True)

if "spin" in sections:
    print("## onednn,cpu OpenMP spin: median ms", flush=True)
    cfgs = [("auto", {}), ("off_act", {"MINFER_ONEDNN_SPLIT": "off", "OMP_WAIT_POLICY": "active"}),
            ("off_s10M", {"MINFER_ONEDNN_SPLIT": "off", "OMP_WAIT_POLICY": "default", "GOMP_SPINCOUNT": "10000000"}),
            ("off_s1M", {"MINFER_ONEDNN_SPLIT": "off", "OMP_WAIT_POLICY": "default", "GOMP_SPINCOUNT": "1000000"})]
    for th, rounds in [(16, 2), (8, 1)]:
        for case in ["resnet18", "squeezenet1_1", "mobilenet_v2", "googlenet_op13", "inception_v3_op13",
                     "densenet121_op13"]:
            if left() < 10: print("  (deadline: stopped)"); break
            res = {k: [] for k, _ in cfgs}; o = []
            for r in range(rounds):
                for k, env in cfgs: res[k].append(mb(case, "onednn,cpu", th, 30, env=env))
                o.append(ob(case, th, 30))
            print("%2dt %-20s " % (th, case) + " ".join("%s %s" % (k, rng(v)) for k, v in res.items()) +
                  " | ORT %s" % rng(o), flush=True)

if "final" in sections:
    print("## final: onednn,cpu default at 16 threads vs ORT 16 threads, median ms (2 rounds)", flush=True)
    for case in sorted(os.listdir(root)):
        if left() < 45: print("  (deadline: stopped)"); break
        a, o = [], []
        for r in range(2):
            a.append(mb(case, "onednn,cpu", 16, 30)); o.append(ob(case, 16, 30))
        print("%-28s minfer %s | ORT %s | ratio %s" % (case, rng(a), rng(o),
              ("%.2f" % (med(a) / med(o))) if med(a) and med(o) else "n/a"), flush=True)
    print("## final: schedulers at 16 threads, median ms (2 rounds)", flush=True)
    for case in ["googlenet_op13", "inception_v3_op13", "resnet18"]:
        if left() < 10: break
        s, p = [], []
        for r in range(2):
            s.append(mb(case, "onednn,cpu", 16, 40)); p.append(mb(case, "onednn,cpu", 16, 40, sched="parallel"))
        print("%-20s seq %s | par %s | par/seq %s" % (case, rng(s), rng(p),
              ("%.2f" % (med(p) / med(s))) if med(p) and med(s) else "n/a"), flush=True)

if "final2" in sections:
    print("## final2: schedulers, default onednn,cpu, median ms (2 rounds)", flush=True)
    for th in [16, 8]:
        for case in ["googlenet_op13", "inception_v3_op13", "resnet18"]:
            if left() < 15: break
            s, p = [], []
            for r in range(2):
                s.append(mb(case, "onednn,cpu", th, 40)); p.append(mb(case, "onednn,cpu", th, 40, sched="parallel"))
            print("%2dt %-20s seq %s | par %s | par/seq %s" % (th, case, rng(s), rng(p),
                  ("%.2f" % (med(p) / med(s))) if med(p) and med(s) else "n/a"), flush=True)
    print("## final2: 16 threads, split=auto (OpenMP) vs split=on, median ms", flush=True)
    for case in ["llama_decoder_op13", "mobilenet_v2", "gpt2_decoder_op13"]:
        if left() < 10: break
        a, o = [], []
        for r in range(2):
            a.append(mb(case, "onednn,cpu", 16, 30)); o.append(mb(case, "onednn,cpu", 16, 30, env={"MINFER_ONEDNN_SPLIT": "on"}))
        print("%-20s auto %s | split=on %s" % (case, rng(a), rng(o)), flush=True)
