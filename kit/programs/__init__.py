"""Child programs: the code the lessons run in a process of its own (kit.devices.run_program), because it breaks
the process it runs in (an out-of-bounds write, a sticky CUDA error), runs under a tool (compute-sanitizer,
AddressSanitizer), or must own the GPU's output (printf). Each file is a plain script that can also be run by hand,
e.g. `python kit/programs/oob.py cuda 1000 1001`. report(obj) sends one JSON-able result back to the parent."""

import json

REPORT_MARK = "@@REPORT@@"  # the parent reads the line that starts with it (kit.devices)


def report(obj):
    print(REPORT_MARK + json.dumps(obj), flush=True)
