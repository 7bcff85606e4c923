"""`make warm` (python -m kit.warm): compile every op of kernels/ and every exercise of exercises/ once, through
the compiler cache that $LABKIT_CACHE_DIR names, so that the first call of each by anyone sharing the cache (a
class: the hub warms its hand-out when it starts) builds from it instead of compiling. Warms the kit this file is in,
for CUDA where the loader would build for CUDA, in its own build folder; prints one line per op.
`python -m kit.warm add2 elu` warms those alone; `-j N` builds N ops at once.

Several at once because one op keeps few cores busy: its build compiles two or three files (a binding, a kernel file,
a CPU file), and the longest, a .cu file of the matmul ladder, alone takes most of a minute. One at a time, the 18
ops and exercises took 4 min on the H200's 16 cores. The default, half the cores, leaves the other half to whoever
already works on the server; the slowest ops (the most source) start first, so they do not finish last alone.

The cache keys paths relative to the build folder (building/compiler_cache.py), so it serves kits laid out as this
one is: every student's copy of the hand-out is.
"""

import argparse
import concurrent.futures
import multiprocessing
import os
import sys
import time

from building import compiler_cache, precompiled_header
from building.environment import COMMON, EXERCISES, KERNELS


def folders():
    """(name, the folder of op folders it is in) for every op and exercise of this kit."""
    found = []
    for parent in (KERNELS, EXERCISES):
        if parent.is_dir():
            found += [(p.parent.name, parent) for p in sorted(parent.glob("*/op.py"))]
    return found


def source_bytes(name, parent):
    """How much C++ and CUDA an op has: what its build's time grows with, near enough to order the builds by."""
    return sum(p.stat().st_size for p in (parent / name).iterdir() if p.suffix in (".cu", ".cpp", ".cc", ".cuh", ".h"))


def build_one(name, parent):
    """Builds one op (in a worker process: each build loads its library, and a process holds one of each op);
    returns (name, seconds, None) or (name, seconds, the first line of the error)."""
    import loader

    t = time.perf_counter()
    try:
        loader.build(name, kernels_dir=parent, common=COMMON)
    except Exception as e:  # one op that does not build (an exercise stub mid-edit) stops no other
        return name, time.perf_counter() - t, (str(e).splitlines()[0] if str(e) else type(e).__name__)
    return name, time.perf_counter() - t, None


def default_jobs():
    return max(1, (os.cpu_count() or 2) // 2)


def main(argv=()):
    """Warms the ops and exercises named in argv, else all of them."""
    p = argparse.ArgumentParser(prog="python -m kit.warm", description="Fill the compiler cache with the kit's ops.")
    p.add_argument("names", nargs="*", help="ops or exercises to warm (default: all)")
    p.add_argument("-j", "--jobs", type=int, default=default_jobs(), help="ops built at once (default: half the cores)")
    args = p.parse_args(list(argv))
    if compiler_cache.shared_folder() is None:  # a user's own cache needs no warming: their builds fill it
        print("make warm: LABKIT_CACHE_DIR is not set: there is no shared cache to warm (README: the compiler cache)")
        return 2
    todo = [(name, parent) for name, parent in folders() if not args.names or name in args.names]
    unknown = sorted(set(args.names) - {name for name, _ in todo})
    if unknown:
        print(f"make warm: no op or exercise {', '.join(unknown)} in this kit")
        return 2
    todo.sort(key=lambda op: -source_bytes(*op))
    jobs = max(1, min(args.jobs, len(todo)))
    t0 = time.perf_counter()
    if jobs == 1:
        results = (build_one(name, parent) for name, parent in todo)
    else:  # spawned workers: a forked one would inherit this process's threads (torch's) in whatever state
        pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
        futures = [pool.submit(build_one, name, parent) for name, parent in todo]
        results = (f.result() for f in concurrent.futures.as_completed(futures))
    failed = []
    for name, seconds, error in results:
        if error is None:
            print(f"[warm] {name}: {seconds:.1f} s", flush=True)
        else:
            failed.append(name)
            print(f"[warm] {name}: did not build: {error}", flush=True)
    if jobs > 1:
        pool.shutdown()
    precompiled_header.wait()  # the bindings' header, started by the second build: the class's builds use it too
    st = compiler_cache.stats() or {}
    print(
        f"[warm] {len(todo) - len(failed)} of {len(todo)} built in {time.perf_counter() - t0:.0f} s, {jobs} at once; "
        f"the cache {st.get('folder')}: {st.get('files')} files, {st.get('size_mb', 0):.1f} MB"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
