"""The lessons' tools, on top of the loader, one idea per module: timing.py (sync-correct timers and statistics),
timeline.py (a timed run as a picture), plots.py (rates against size), devices.py (GPU listing, child processes),
debugging.py (printf, the broken kernels), sanitizers.py, resources.py (registers, spills, occupancy), fast_math.py,
build_ways.py (the three builds timed), grade.py and checks.py (the exercises), notebook.py, nbstrip.py, results.py
(where recordings go and how a lesson reads them back), warm.py (`make warm`: every op into the compiler cache),
record_*.py (the GPU machine's recorders), and programs/ (the child programs). What a build needs is in building/."""
