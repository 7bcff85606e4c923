"""`python -m kit.record_debug`: run the GPU cases of 05_debugging.ipynb on this machine and write
results/<date>-<gpu>/debug.json, which the notebook shows, labelled with machine and date, where there is no GPU (or no
compute-sanitizer). Needs a GPU; uses compute-sanitizer where it is installed. A few minutes; the file is rewritten
after every case, so a run cut short keeps what it recorded. --no-builds: skip timing the three ways to build for
CUDA (the last case, about a minute or two)."""
import sys

from kit.debugging import record

if __name__ == "__main__":
    record(builds="--no-builds" not in sys.argv[1:])
