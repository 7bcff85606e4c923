"""What each student of a class may use on one server: compile jobs (MAX_JOBS), compute threads, memory per process.

A student's cold build of an op compiles its files in parallel, up to MAX_JOBS at once (torch's cpp_extension hands it
to ninja). When the whole class builds at the same moment (the first cell of a lab), the server runs
students * MAX_JOBS compilers at once: that must fit the cores and, above all, the memory. One g++ compiling a
torch binding (add2.cpp) peaked at 0.95 GB of resident memory here (/usr/bin/time -v, torch 2.14, CPU build);
JOB_BYTES leaves room for bigger bindings and nvcc's host pass."""

import os

GiB = 1024**3
JOB_BYTES = int(1.5 * GiB)  # one compile job of a torch binding, with margin over the 0.95 GB measured
MIN_PROCESS_BYTES = 2 * GiB  # a kernel with torch loaded holds ~0.8 GB of data; a binding's compiler ~1 GB


def max_jobs(cores, mem_available, students, job_bytes=JOB_BYTES):
    """Compile jobs per student when every student builds at once: a share of the cores and of the available memory,
    at least 1 (a class too big for the memory even then needs a bigger server, or several: README "Run a class")."""
    students = max(1, students)
    return max(1, min(cores // students, mem_available // (students * job_bytes)))


def threads(cores, students):
    """Threads of a student's torch ops (OMP_NUM_THREADS): a share of the cores, at least 1, so one student's long
    computation leaves the other cores to the others."""
    return max(1, cores // max(1, students))


def memory_limit(mem_total, students):
    """The most memory one process of a student may take (Spawner.mem_limit): a share of the server's memory, at
    least MIN_PROCESS_BYTES. A cap on a runaway allocation, not a reservation: the shares may add up to more."""
    return max(MIN_PROCESS_BYTES, mem_total // max(1, students))


def meminfo(field):
    """A field of /proc/meminfo in bytes (MemAvailable, MemTotal); 0 where there is no /proc."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def for_class(students):
    """The environment of each student's server and the memory limit, for a class of `students` on this server."""
    cores = os.cpu_count() or 1
    return (
        {
            "MAX_JOBS": str(max_jobs(cores, meminfo("MemAvailable"), students)),
            "OMP_NUM_THREADS": str(threads(cores, students)),
        },
        memory_limit(meminfo("MemTotal"), students),
    )
