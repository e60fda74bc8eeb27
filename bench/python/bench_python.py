# SPDX-License-Identifier: MIT
"""The Python binding's benchmark (issue #30's targets), one run, ratios
within it.

Usage (Debian's interpreter, which has numpy and python3-flor; the extension
from a build tree):

    PYTHONPATH=<build>/python /usr/bin/python3 bench/python/bench_python.py \
        [--quick] [--rounds R] [--c-batch <build>/bench/bloomkit_bench_python_c] \
        [--json FILE] [--csv FILE] [--parts 1234]

or `cmake --build <build> --target bench_python`, or
`BK_BENCH_PYTHON=1 scripts/bench.sh` (after the C suite). The full run takes
about two minutes on a 2-core machine (Flor, pure Python, is most of it);
--quick (a tenth or less of each size, 2 rounds) takes seconds.

Parts, each timed the same way for every contender (time.perf_counter_ns
around a plain `for` loop of one shape; gc disabled while timing; R rounds
with the contenders interleaved in each round, A B C A B C, so machine noise
hits them alike; the figure is the minimum over rounds, the median is shown
beside it; R is 3 (--quick: 2), 2R + 1 for the batches):

1. single keys: 10^6 random 16-byte `bytes` keys; `add = x.add; for k in
   keys: add(k)` into a fresh bloomkit.BloomFilter(10^6, 0.01) (split-block,
   the default), a fresh `set` and a fresh flor.BloomFilter(n=10^6, p=0.01);
   then `for k in keys: k in x` over the same (present) keys. Targets: bloomkit
   at most 1.3x the set, and at least 10x faster than Flor (its time at most
   0.1x Flor's).
2. batches: 10^7 uint64 keys in a numpy array (splitmix64 of a seed, so the C
   program computes the same keys; the checksums are compared): `add_many`
   then `contains_many` into a fresh BloomFilter(10^7, 0.01), against
   bloomkit_bench_python_c (bench/python/c_batch.c: the same filter, keys and
   passes through bk_bloom_add_many / bk_bloom_contains_many, 512 keys a
   call as the binding does), which this script runs once per round before
   its own passes. C's output array is allocated and its pages faulted in
   before its timing starts; the binding's contains_many time includes
   allocating the numpy bool array it returns. Target: ns per key at most
   1.5x C's.
3. rbloom's workload, as rbloom's benchmarks/compare.py runs it: a filter of
   (10^7, 0.01), `for i in range(N): bf.add(i + 0.5)`, then `for i in
   range(N): if i + 0.5 not in bf: raise`; here also as add_many /
   contains_many over a list of those floats (list built untimed; the check
   `all(...)` timed). Flor cannot hash floats: like compare.py's
   `run_bytes`, it gets struct.pack("d", i + 0.5) in the same loops (the
   packing timed; it is a small part of Flor's time), all 10^7 keys, in the
   first round only (about a minute); under --quick it runs a tenth of the
   keys (in the full-size filter), its time scaled by 10 and marked
   "extrapolated".
   rbloom is not installable here: its published 2.52 s (M1 Pro) is quoted,
   not compared.
4. memory, in a fresh interpreter (this script run again with
   --memory-child, so nothing freed by the other parts is reused): VmRSS
   (/proc/self/status) before creating BloomFilter(10^7, 0.01) and after `for i in range(10**7): bf.add(i)` (each int freed after its
   call), against bf.info["memory"], the bytes the C library holds. Target:
   growth at most 1.1x that plus 1 MiB (one Python object per key would be
   at least 28 bytes a key, 280 MB). Also reported, not a target: the peak
   RSS a batch call adds while it runs (VmHWM reset through
   /proc/self/clear_refs), for add_many over a list of 10^7 floats and over
   a numpy array.

Output: a markdown table of the targets (met / missed), a table of every
timed row, PASS/MISS lines in scripts/bench.sh's summary format; --json and
--csv write the same rows to a file. Exit status 0 (misses are reported).
"""

import argparse
import csv
import gc
import json
import os
import platform
import random
import statistics
import struct
import subprocess
import sys
import time

try:
    import bloomkit
except ImportError as e:  # pragma: no cover
    bloomkit, bloomkit_error = None, e

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None
try:
    import flor
except ImportError:  # pragma: no cover
    flor = None

FPP = 0.01
GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1


# ---- timing loops: one shape per operation, the same for every contender --

def time_calls(f, keys):
    """ns for `for k in keys: f(k)`."""
    t0 = time.perf_counter_ns()
    for k in keys:
        f(k)
    return time.perf_counter_ns() - t0


def time_in(c, keys):
    """ns for `for k in keys: k in c`."""
    t0 = time.perf_counter_ns()
    for k in keys:
        k in c  # noqa: B015 (the operation being timed)
    return time.perf_counter_ns() - t0


def rbloom_loop(bf, n, pack=None):
    """rbloom's compare.py run() (pack=None) or run_bytes() (pack: struct's
    pack of "d"), as (add ns, check ns)."""
    t0 = time.perf_counter_ns()
    if pack is None:
        for i in range(n):
            bf.add(i + 0.5)
        t1 = time.perf_counter_ns()
        for i in range(n):
            if i + 0.5 not in bf:
                raise ValueError("a false negative")
    else:
        for i in range(n):
            bf.add(pack("d", i + 0.5))
        t1 = time.perf_counter_ns()
        for i in range(n):
            if pack("d", i + 0.5) not in bf:
                raise ValueError("a false negative")
    return t1 - t0, time.perf_counter_ns() - t1


class Rows:
    """Timed rows (name -> samples of ns per key) and targets."""

    def __init__(self):
        self.samples = {}
        self.notes = {}
        self.targets = []

    def add(self, name, ns_total, n, note=""):
        self.samples.setdefault(name, []).append(ns_total / n)
        if note:
            self.notes[name] = note

    def best(self, name):
        return min(self.samples[name])

    def target(self, label, num, den, limit, fmt="ratio", value=None,
               detail=""):
        if value is None:
            value = self.best(num) / self.best(den)
        self.targets.append({"target": label, "value": value, "limit": limit,
                             "met": value <= limit, "numerator": num,
                             "denominator": den, "detail": detail,
                             "format": fmt})


def count(n):
    """10^6 for 1000000."""
    e = len(str(n)) - 1
    return f"10^{e}" if n == 10**e else str(n)


def quiet():
    gc.collect()
    gc.disable()


# ---- part 1: single keys ---------------------------------------------------

def part_single(rows, n, rounds, log):
    rng = random.Random(30)
    keys = [rng.randbytes(16) for _ in range(n)]
    log(f"single keys: {n} 16-byte keys, {rounds} rounds"
        + ("" if flor else " (no flor: python3-flor missing)"))
    for r in range(rounds):
        bf = bloomkit.BloomFilter(n, FPP)
        s = set()
        fl = flor.BloomFilter(n=n, p=FPP) if flor else None
        quiet()
        rows.add("bloomkit add", time_calls(bf.add, keys), n)
        rows.add("set add", time_calls(s.add, keys), n)
        if fl is not None:
            rows.add("flor add", time_calls(fl.add, keys), n)
        rows.add("bloomkit in", time_in(bf, keys), n)
        rows.add("set in", time_in(s, keys), n)
        if fl is not None:
            rows.add("flor in", time_in(fl, keys), n)
        gc.enable()
        if sum(k in bf for k in keys) != n:
            raise SystemExit("bench_python: bloomkit lost a key")
        log(f"  round {r + 1}: bloomkit add/in "
            f"{rows.samples['bloomkit add'][-1]:.0f}/"
            f"{rows.samples['bloomkit in'][-1]:.0f} ns, set "
            f"{rows.samples['set add'][-1]:.0f}/"
            f"{rows.samples['set in'][-1]:.0f} ns"
            + (f", flor {rows.samples['flor add'][-1]:.0f}/"
               f"{rows.samples['flor in'][-1]:.0f} ns" if fl else ""))
    what = f"{count(n)} 16-byte bytes keys"
    rows.target(f"`bf.add(key)` vs `set.add`, {what}", "bloomkit add",
                "set add", 1.3)
    rows.target(f"`key in bf` vs `key in set`, {what}", "bloomkit in",
                "set in", 1.3)
    if flor:
        rows.target(f"`bf.add(key)` vs Flor's add, {what}", "bloomkit add",
                    "flor add", 0.1)
        rows.target(f"`key in bf` vs `key in` Flor, {what}", "bloomkit in",
                    "flor in", 0.1)


# ---- part 2: batches against C ---------------------------------------------

def splitmix_keys(n, seed):
    """The uint64 keys c_batch.c computes: splitmix64(seed + (i+1) golden)."""
    x = np.arange(1, n + 1, dtype=np.uint64)
    x *= np.uint64(GOLDEN)
    x += np.uint64(seed & MASK)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def run_c(c_batch, n, seed):
    out = subprocess.run([c_batch, str(n), str(seed), "1"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def part_batch(rows, n, rounds, c_batch, log, info):
    if np is None:
        log("batches: skipped (no numpy: python3-numpy)")
        return
    seed = 30
    keys = splitmix_keys(n, seed)
    xor = int(np.bitwise_xor.reduce(keys))
    total = int(keys.sum(dtype=np.uint64))
    log(f"batches: {n} uint64 keys in a numpy array, {rounds} rounds"
        + ("" if c_batch else " (no C program: pass --c-batch)"))
    for r in range(rounds):
        if c_batch:
            c = run_c(c_batch, n, seed)
            if (c["xor"], c["sum"]) != (xor, total):
                raise SystemExit("bench_python: the C program's keys differ")
            if c["hits"] != n:
                raise SystemExit("bench_python: C lost a key")
            rows.samples.setdefault("C bk_bloom_add_many", []).append(
                c["add_ns_per_key"][0])
            rows.samples.setdefault("C bk_bloom_contains_many", []).append(
                c["contains_ns_per_key"][0])
        bf = bloomkit.BloomFilter(n, FPP)
        quiet()
        t0 = time.perf_counter_ns()
        bf.add_many(keys)
        t1 = time.perf_counter_ns()
        found = bf.contains_many(keys)
        t2 = time.perf_counter_ns()
        gc.enable()
        if not found.all():
            raise SystemExit("bench_python: bloomkit lost a key")
        rows.add("bloomkit add_many (numpy)", t1 - t0, n)
        rows.add("bloomkit contains_many (numpy)", t2 - t1, n)
        if c_batch:
            i = bf.info
            if (c["m_bits"], c["k"]) != (i["m_bits"], i["k"]):
                raise SystemExit("bench_python: C's filter has another shape")
            info["c_batch_filter"] = {k: c[k] for k in
                                      ("m_bits", "k", "memory", "chunk")}
        log(f"  round {r + 1}: add_many/contains_many "
            f"{rows.samples['bloomkit add_many (numpy)'][-1]:.2f}/"
            f"{rows.samples['bloomkit contains_many (numpy)'][-1]:.2f} ns/key"
            + (f", C {c['add_ns_per_key'][0]:.2f}/"
               f"{c['contains_ns_per_key'][0]:.2f}" if c_batch else ""))
    if c_batch:
        what = f"{count(n)} uint64 keys"
        rows.target(f"`add_many(numpy)` vs C bk_bloom_add_many, {what}",
                    "bloomkit add_many (numpy)", "C bk_bloom_add_many", 1.5)
        rows.target(f"`contains_many(numpy)` vs C bk_bloom_contains_many, "
                    f"{what}", "bloomkit contains_many (numpy)",
                    "C bk_bloom_contains_many", 1.5)


# ---- part 3: rbloom's workload ---------------------------------------------

def part_rbloom(rows, n, rounds, flor_n, log):
    log(f"rbloom's workload: {n} floats i + 0.5, {rounds} rounds; Flor on "
        f"{flor_n} of them, first round only")
    floats = [i + 0.5 for i in range(n)]
    for r in range(rounds):
        bf = bloomkit.BloomFilter(n, FPP)
        quiet()
        a, c = rbloom_loop(bf, n)
        rows.add("rbloom workload: bloomkit loop, add", a, 1)
        rows.add("rbloom workload: bloomkit loop, check", c, 1)
        rows.add("rbloom workload: bloomkit loop, total", a + c, 1)
        gc.enable()
        bf = bloomkit.BloomFilter(n, FPP)
        quiet()
        t0 = time.perf_counter_ns()
        bf.add_many(floats)
        t1 = time.perf_counter_ns()
        if not all(bf.contains_many(floats)):
            raise ValueError("a false negative")
        t2 = time.perf_counter_ns()
        gc.enable()
        rows.add("rbloom workload: bloomkit add_many(list), add", t1 - t0, 1)
        rows.add("rbloom workload: bloomkit contains_many(list), check",
                 t2 - t1, 1)
        rows.add("rbloom workload: bloomkit batch, total", t2 - t0, 1)
        if r == 0 and flor:
            fl = flor.BloomFilter(n=n, p=FPP)
            quiet()
            a, c = rbloom_loop(fl, flor_n, struct.pack)
            gc.enable()
            scale = n / flor_n
            note = "" if flor_n == n else \
                f"extrapolated: {flor_n} keys timed, x{scale:g}"
            rows.add("rbloom workload: Flor loop (bytes), add", a * scale, 1,
                     note)
            rows.add("rbloom workload: Flor loop (bytes), check", c * scale,
                     1, note)
            rows.add("rbloom workload: Flor loop (bytes), total",
                     (a + c) * scale, 1, note)
        log(f"  round {r + 1}: loop "
            f"{rows.samples['rbloom workload: bloomkit loop, total'][-1] / 1e9:.2f}"
            f" s, batch "
            f"{rows.samples['rbloom workload: bloomkit batch, total'][-1] / 1e9:.2f}"
            " s" + (f", Flor {rows.best('rbloom workload: Flor loop (bytes), total') / 1e9:.1f} s"
                    if flor and r == 0 else ""))


# ---- part 4: memory ----------------------------------------------------------

def rss_bytes(field="VmRSS:"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def memory_child(n):
    """In a fresh interpreter (so no memory freed by earlier parts is
    reused): RSS before creating the filter, after creating it, after n
    single-key adds of ints; printed as JSON."""
    gc.collect()
    before = rss_bytes()
    bf = bloomkit.BloomFilter(n, FPP)
    created = rss_bytes()
    add = bf.add
    for i in range(n):
        add(i)
    after = rss_bytes()
    res = {"before": before, "created": created, "after": after,
           "memory": bf.info["memory"]}
    del bf, add
    # What a batch call holds while it runs, beyond the filter: peak RSS
    # (VmHWM, reset through /proc/self/clear_refs) over creating a filter
    # and add_many on it, minus RSS before, for a list of floats and for a
    # numpy array of the same count.
    batches = [("list", lambda: [i + 0.5 for i in range(n)])]
    if np is not None:
        batches.append(("numpy", lambda: np.arange(n, dtype=np.uint64)))
    for name, make in batches:
        keys = make()
        gc.collect()
        base = rss_bytes()
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            break
        bf = bloomkit.BloomFilter(n, FPP)
        bf.add_many(keys)
        res[f"batch_peak_{name}"] = rss_bytes("VmHWM:") - base
        del keys, bf
    print(json.dumps(res))


def part_memory(rows, n, log, info):
    out = subprocess.run([sys.executable, os.path.abspath(__file__),
                          "--memory-child", str(n)], check=True,
                         capture_output=True, text=True).stdout
    m = json.loads(out)
    before, created, after = m["before"], m["created"], m["after"]
    mem = m["memory"]
    growth = after - before
    info["memory"] = {"n": n, "rss_before": before, "rss_created": created,
                      "rss_after": after, "rss_growth": growth,
                      "c_memory": mem,
                      "growth_bytes_per_key": growth / n}
    for name in ("list", "numpy"):
        if f"batch_peak_{name}" in m:
            peak = m[f"batch_peak_{name}"]
            info["memory"][f"batch_peak_{name}"] = peak
            log(f"memory: add_many over a {name} of {n} keys: peak RSS "
                f"+{peak / 2**20:.1f} MiB during the call "
                f"({max((peak - mem) / n, 0.0):.1f} B/key beyond the filter)")
    log(f"memory: {n} int keys added one by one: RSS +{growth / 2**20:.1f} MiB"
        f" ({growth / n:.2f} B/key), the filter's memory "
        f"{mem / 2**20:.1f} MiB")
    limit = (1.1 * mem + 2**20) / mem
    what = f"{count(n)} keys"
    rows.target(f"RSS growth vs the filter's C memory, {what}", None, None,
                limit, value=growth / mem,
                detail=f"RSS +{(created - before) / 2**20:.1f} MiB at "
                       f"create, +{growth / 2**20:.1f} MiB after the adds; "
                       f"C memory {mem / 2**20:.1f} MiB")


# ---- output --------------------------------------------------------------------

def fmt_row_value(name, v):
    if name.startswith("rbloom workload"):
        return f"{v / 1e9:.2f} s"
    return f"{v:.1f} ns/key"


def report(rows, args, info, out):
    p = lambda s="": print(s, file=out)  # noqa: E731
    p("| target | measured | limit | |")
    p("|---|---:|---:|---|")
    for t in rows.targets:
        d = f" ({t['detail']})" if t["detail"] else ""
        if t["numerator"]:
            d = (f" ({fmt_row_value(t['numerator'], rows.best(t['numerator']))}"
                 f" / {fmt_row_value(t['denominator'], rows.best(t['denominator']))})")
        p(f"| {t['target']} | {t['value']:.3f}x{d} | {t['limit']:.2f}x | "
          f"{'met' if t['met'] else 'missed'} |")
    p()
    p(f"Ratios are of the minimum over the rounds of each row "
      f"(contenders interleaved in each round); load average "
      f"{info['load_before'][0]:.2f} before, {info['load_after'][0]:.2f} "
      f"after; {info['seconds']:.0f} s.")
    p()
    p("| row | min | median | rounds |")
    p("|---|---:|---:|---:|")
    for name, s in rows.samples.items():
        note = f" ({rows.notes[name]})" if name in rows.notes else ""
        p(f"| {name}{note} | {fmt_row_value(name, min(s))} | "
          f"{fmt_row_value(name, statistics.median(s))} | {len(s)} |")
    p()
    p("rbloom (published, not run here: not installable): 2.52 s for the "
      "same workload on an M1 Pro (pybloomfiltermmap3 4.78 s, Flor 76.94 s "
      "there).")
    mem = info.get("memory", {})
    for name in ("list", "numpy"):
        if f"batch_peak_{name}" in mem:
            peak, n = mem[f"batch_peak_{name}"], mem["n"]
            what = "numpy uint64 array" if name == "numpy" else "list of floats"
            p(f"Peak RSS over creating a filter and `add_many` over a {what} "
              f"of {count(n)} keys: +{peak / 2**20:.1f} MiB, of which the "
              f"filter's {mem['c_memory'] / 2**20:.1f} MiB "
              f"({max((peak - mem['c_memory']) / n, 0.0):.1f} bytes a key beyond it, "
              "released when the call returns).")
    p()
    for t in rows.targets:
        lab = t["target"].replace("`", "")
        p(f"  {'PASS' if t['met'] else 'MISS'}  python: {lab}  "
          f"{t['value']:.3f}x (limit {t['limit']:.2f}x)")


def write_files(rows, args, info):
    data = {"python": sys.version.split()[0], "machine": platform.machine(),
            "bloomkit": getattr(bloomkit, "library_version", None),
            "argv": sys.argv[1:], "quick": args.quick, "rounds": args.rounds,
            "statistic": "min over rounds",
            "rows": [{"row": k, "ns": v, "min": min(v),
                      "median": statistics.median(v),
                      "note": rows.notes.get(k, "")}
                     for k, v in rows.samples.items()],
            "targets": rows.targets, "info": info}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["kind", "name", "min", "median", "limit", "status",
                        "unit"])
            for r in data["rows"]:
                unit = "ns" if r["row"].startswith("rbloom") else "ns/key"
                w.writerow(["row", r["row"], f"{r['min']:.4f}",
                            f"{r['median']:.4f}", "", "", unit])
            for t in rows.targets:
                w.writerow(["target", t["target"], f"{t['value']:.4f}", "",
                            t["limit"], "met" if t["met"] else "missed",
                            "ratio"])


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="PYTHONPATH=<build>/python /usr/bin/python3 %(prog)s "
              "[--quick] [--rounds R] [--c-batch PATH] [--json FILE] "
              "[--csv FILE] [--parts 1234]")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, 2 rounds: seconds")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds (default 3, --quick 2)")
    ap.add_argument("--c-batch", default=None,
                    help="bloomkit_bench_python_c (default: "
                         "<PYTHONPATH build>/bench/bloomkit_bench_python_c)")
    ap.add_argument("--json", help="write rows and targets as JSON here")
    ap.add_argument("--csv", help="write rows and targets as CSV here")
    ap.add_argument("--parts", default="1234",
                    help="which parts to run (default 1234)")
    ap.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if bloomkit is None:
        sys.exit(f"bench_python: cannot import bloomkit ({bloomkit_error}); "
                 "run with PYTHONPATH=<build>/python /usr/bin/python3")
    if args.memory_child:
        memory_child(args.memory_child)
        return
    if args.rounds is None:
        args.rounds = 2 if args.quick else 3
    c_batch = args.c_batch
    if c_batch is None:
        for d in os.environ.get("PYTHONPATH", "").split(os.pathsep):
            cand = os.path.join(os.path.dirname(os.path.abspath(d)), "bench",
                                "bloomkit_bench_python_c")
            if d and os.access(cand, os.X_OK):
                c_batch = cand
                break
    q = args.quick
    n1, n2, n3, n4 = ((10**5, 10**6, 10**6, 10**6) if q else
                      (10**6, 10**7, 10**7, 10**7))
    flor_n = n3 // 10 if q else n3

    def log(msg):
        print(f"bench_python: {msg}", file=sys.stderr, flush=True)

    log(f"bloomkit {getattr(bloomkit, 'library_version', '?')} from "
        f"{os.path.dirname(bloomkit.__file__)}, Python "
        f"{sys.version.split()[0]}, load {os.getloadavg()[0]:.2f}")
    rows, info = Rows(), {"load_before": os.getloadavg()}
    t0 = time.time()
    if "1" in args.parts:
        part_single(rows, n1, args.rounds, log)
    if "2" in args.parts:
        # Each round is about a second: more of them, as one noisy pass
        # moves a 10^7-key row by 2x on a shared machine.
        part_batch(rows, n2, 2 * args.rounds + 1, c_batch, log, info)
    if "3" in args.parts:
        part_rbloom(rows, n3, args.rounds, flor_n, log)
    if "4" in args.parts:
        part_memory(rows, n4, log, info)
    info["load_after"] = os.getloadavg()
    info["seconds"] = time.time() - t0
    log(f"done in {info['seconds']:.0f} s, load {os.getloadavg()[0]:.2f}")
    report(rows, args, info, sys.stdout)
    write_files(rows, args, info)


if __name__ == "__main__":
    main()
