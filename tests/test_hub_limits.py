"""Each student's share of a class server (hub/limits.py): compile jobs, threads, memory per process."""

import pytest

from hub.limits import GiB, JOB_BYTES, MIN_PROCESS_BYTES, for_class, max_jobs, memory_limit, threads


@pytest.mark.parametrize(
    "cores, mem, students, jobs",
    [
        (16, 100 * GiB, 1, 16),  # alone on the server: every core
        (16, 100 * GiB, 4, 4),  # four students: a quarter of the cores each
        (16, 100 * GiB, 12, 1),  # more students than jobs to go round: one each, never 0
        (16, 100 * GiB, 30, 1),
        (64, 12 * GiB, 4, 2),  # cores to spare, memory short: 4 students * 2 jobs * 1.5 GiB fit in 12 GiB, 3 would not
        (2, 24 * GiB, 4, 1),  # this CI machine's size and the test's class
        (8, 0, 4, 1),  # memory unknown (no /proc/meminfo): still one job
    ],
)
def test_max_jobs_is_a_share_of_cores_and_memory_and_at_least_one(cores, mem, students, jobs):
    assert max_jobs(cores, mem, students) == jobs


def test_a_whole_class_building_at_once_fits_in_memory_wherever_it_can():
    for cores in (2, 16, 128):
        for mem in (8 * GiB, 24 * GiB, 128 * GiB, 2000 * GiB):
            for students in (1, 5, 12, 30, 100):
                jobs = max_jobs(cores, mem, students)
                assert jobs >= 1 and jobs * students <= max(cores, students)
                if students * JOB_BYTES <= mem:  # one job each fits: then all of them together fit
                    assert students * jobs * JOB_BYTES <= mem, (cores, mem, students, jobs)


def test_threads_and_memory_are_shares_with_a_floor():
    assert threads(16, 4) == 4 and threads(16, 30) == 1 and threads(1, 0) == 1
    assert memory_limit(128 * GiB, 4) == 32 * GiB
    assert memory_limit(24 * GiB, 30) == MIN_PROCESS_BYTES  # a share too small for a kernel with torch loaded


def test_for_class_reads_this_machine():
    env, limit = for_class(4)
    assert int(env["MAX_JOBS"]) >= 1 and int(env["OMP_NUM_THREADS"]) >= 1 and limit >= MIN_PROCESS_BYTES
