"""The kernel lab's ops, compiled ahead of time by aot/setup.py: `from labkit_aot import ops; ops.add2(a, b)`.

Importing this defines each op's schemas from its op.py (shipped here as op_py/<op>.py) and loads its library
(_<op>*.so), which holds the kernels: the two steps the JIT loader takes, without the compiler. Use it in a process
that does not also use the JIT loader's ops (`from loader import ops`): an op is defined once per process.
"""

from pathlib import Path

from ._prebuilt import Prebuilt

ops = Prebuilt.from_package(Path(__file__).resolve().parent)
