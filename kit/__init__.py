"""The kit's Python helpers, beside loader.py: compile-error reports, the doctor, timing, notebook tools."""
