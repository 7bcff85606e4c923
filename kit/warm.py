"""`make warm` (python -m kit.warm): compile every op of kernels/ and every exercise of exercises/ once, through
the compiler cache that $LABKIT_CACHE_DIR names, so that the first call of each by anyone sharing the cache (a
class: the hub warms its hand-out when it starts) builds from it instead of compiling. Warms the kit this file is in,
for CUDA where the loader would build for CUDA, in its own build folder; prints one line per op.
`python -m kit.warm add2 elu` warms those alone.

The cache keys paths relative to the build folder (building/compiler_cache.py), so it serves kits laid out as this
one is: every student's copy of the hand-out is.
"""

import sys
import time

import loader
from building import compiler_cache
from building.environment import COMMON, EXERCISES, KERNELS


def folders():
    """(name, the folder of op folders it is in) for every op and exercise of this kit."""
    found = []
    for parent in (KERNELS, EXERCISES):
        if parent.is_dir():
            found += [(p.parent.name, parent) for p in sorted(parent.glob("*/op.py"))]
    return found


def main(argv=()):
    """Warms the ops and exercises named in argv, else all of them."""
    if compiler_cache.folder() is None:
        print("make warm: LABKIT_CACHE_DIR is not set: there is no shared cache to warm (README: the compiler cache)")
        return 2
    todo = [(name, parent) for name, parent in folders() if not argv or name in argv]
    unknown = sorted(set(argv) - {name for name, _ in todo})
    if unknown:
        print(f"make warm: no op or exercise {', '.join(unknown)} in this kit")
        return 2
    failed = []
    t0 = time.perf_counter()
    for name, parent in todo:
        t = time.perf_counter()
        try:
            loader.build(name, kernels_dir=parent, common=COMMON)
        except Exception as e:  # one op that does not build (an exercise stub mid-edit) stops no other
            failed.append(name)
            print(f"[warm] {name}: did not build: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
            continue
        print(f"[warm] {name}: {time.perf_counter() - t:.1f} s", flush=True)
    st = compiler_cache.stats() or {}
    print(
        f"[warm] {len(todo) - len(failed)} of {len(todo)} built in {time.perf_counter() - t0:.0f} s; "
        f"the cache {st.get('folder')}: {st.get('files')} files, {st.get('size_mb', 0):.1f} MB"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
