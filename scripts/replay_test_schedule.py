"""Replays the suite's pytest-xdist scheduler (tests/conftest.py's GroupScheduling) on the durations a run measured,
so that a change to the order of the groups can be weighed without a GPU machine: which worker ran which groups, and
when each worker ended.

    python scripts/replay_test_schedule.py results/2026-12-06-nvidia-h100/pytest-parallel-first.xml.gz [--workers 16]

Each test takes what the run's JUnit XML says (its setup and teardown included); the tests are collected on this
machine (pytest --collect-only), and a test that only a GPU machine collects goes beside the first of its function. A
worker runs a test once it knows the one after it, or is told to stop, as xdist's workers do. Left out: collecting,
starting the workers, pytest's own time between tests (on the H100, 23 s of the 339 s parallel part). Replayed with
the kit that ran them, the H100's two runs of 2026-12-06 end at 316 and 248 s, what their logs give the busiest worker.
"""

import argparse
import collections
import gzip
import heapq
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
import conftest  # noqa: E402  (the suite's scheduler and groups)


def durations(xml_path):
    """{test id: seconds} from a JUnit XML file (gzipped or not), as pytest names the tests."""
    opener = gzip.open if str(xml_path).endswith(".gz") else open
    with opener(xml_path, "rb") as f:
        root = ET.parse(f).getroot()
    seconds = collections.Counter()
    for case in root.iter("testcase"):
        seconds[case.get("classname").replace(".", "/") + ".py::" + case.get("name")] += float(case.get("time"))
    return seconds


def collection_order(test_ids):
    """test_ids in the order pytest sends them: by file, as collected here, then by conftest.py's group_rank."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    here = [line.strip() for line in out.splitlines() if "::" in line]
    place = {t: i for i, t in enumerate(here)}
    first_of_function = {}
    for i, t in enumerate(here):
        first_of_function.setdefault(t.split("[", 1)[0], i)

    def as_collected(t):
        return t.split("::", 1)[0], place.get(t, first_of_function.get(t.split("[", 1)[0], len(here)))

    return sorted(sorted(test_ids, key=as_collected), key=conftest.group_rank)


def replay(seconds, order, workers):
    """Each worker's end and the groups it ran, as (group, seconds) runs in the order it ran them."""
    sched, nodes = conftest.offline_schedule(order, workers)
    done = {node: set() for node in nodes}
    running, events, ends = set(), [], {}

    def start(node, now):
        pending = [i for i in node.sent if i not in done[node]]
        if node in running or not pending or (len(pending) < 2 and not node.shutting_down):
            return
        running.add(node)
        heapq.heappush(events, (now + seconds[order[pending[0]]], node.gateway.id, pending[0], node))

    for node in nodes:
        start(node, 0.0)
    while events:
        now, name, index, node = heapq.heappop(events)
        running.discard(node)
        done[node].add(index)
        ends[name] = now
        sched.mark_test_complete(node, index)
        for other in nodes:
            start(other, now)
    runs = {}
    for node in nodes:
        groups = []
        for index in node.sent:
            group = conftest.xdist_group(order[index])
            if groups and groups[-1][0] == group:
                groups[-1][1] += seconds[order[index]]
            else:
                groups.append([group, seconds[order[index]]])
        runs[node.gateway.id] = (ends.get(node.gateway.id, 0.0), groups)
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", type=Path, help="a parallel run's JUnit XML (scripts/gpu_session.sh's pytest*.xml)")
    parser.add_argument("--workers", type=int, default=16, help="xdist workers (gpu_session.sh's WORKERS)")
    args = parser.parse_args()
    seconds = durations(args.xml)
    runs = replay(seconds, collection_order(list(seconds)), args.workers)
    for name, (end, groups) in sorted(runs.items(), key=lambda kv: kv[1][0]):
        shown = " | ".join(f"{g.removeprefix('tests/test_')} {s:.0f}" for g, s in groups if s >= 5)
        print(f"{name:>5} ends at {end:4.0f} s: {shown}")
    print(f"the parallel part's busiest worker ends at {max(end for end, _ in runs.values()):.0f} s")


if __name__ == "__main__":
    main()
