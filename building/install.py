"""`make`'s .venv: requirements.txt installed into it by uv where this machine's pip settings carry over to uv, else by
pip. Run with the .venv's own Python: `.venv/bin/python -m building.install requirements.txt`.

Why uv: pip unpacks the wheels one after another and byte-compiles them on one core; uv unpacks them in parallel into
its cache (~/.cache/uv), links them into .venv and byte-compiles on every core. A fresh .venv (torch with CUDA's
libraries, ~6 GB) took 51 s on the 2-core machine with uv against ~96 s with pip (2026-12-07), the same 160 packages at
the same versions; the next .venv on the machine comes from uv's cache.

Why byte-compiled at install: where PYTHONDONTWRITEBYTECODE is set (the CI machine sets it) Python writes no bytecode
as it imports, and every Python process the tests start would compile torch's modules again (import torch: 5.1 s of
CPU against 2.3 s).

uv reads none of pip's settings (pip.conf, PIP_* variables), and a machine may need them: a mirror, a constraint file,
a company's certificates. Each setting pip reports (`pip config list`) is passed on as uv's own option; one with no
counterpart here sends the install to pip, as does a uv that cannot be installed or an install that fails. uv takes a
package from whichever index has the best version, as pip does (--index-strategy unsafe-best-match; uv's own default
takes it from the first index that has the package at all). LABKIT_INSTALLER=pip always installs with pip.
"""

import ast
import os
import re
import subprocess
import sys

UV = "uv>=0.13,<0.14"  # the options below are those of this series

# pip settings that change nothing of what is installed where, or that uv has in its own way (config-file: where the
# other settings came from, PIP_CONFIG_FILE)
IGNORED = {
    "config-file",
    "disable-pip-version-check",
    "progress-bar",
    "no-input",
    "quiet",
    "verbose",
    "retries",
    "no-color",
    "cache-dir",
    "no-cache-dir",
    "compile",
    "no-compile",
    "root-user-action",
    "require-virtualenv",
    "break-system-packages",
}
# pip settings that apply to `pip install` (others, such as `download.dest`, do not), weakest first: a PIP_* variable
# wins over the configuration files' [install], which wins over their [global]
SECTIONS = {"global": 0, "install": 1, ":env:": 2}


def pip_settings(python=sys.executable):
    """{key: value} of the pip settings that apply to `pip install` here, as pip itself reads them (its configuration
    files and PIP_* variables, `pip config list`); None where pip cannot say."""
    try:
        out = subprocess.run(
            [python, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=120, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_pip_config(out)


def parse_pip_config(text):
    """`pip config list`'s lines (`global.index-url='https://...'`, `:env:.find-links='/opt/wheels'`) as {key: value}
    for the sections that apply to `pip install`, each key's value from the strongest section that sets it."""
    found = {}  # key: (rank, value)
    for line in text.splitlines():
        m = re.match(r"^(:env:|[^.]+)\.([^=]+)=(.*)$", line.strip())
        if not m or m.group(1) not in SECTIONS:
            continue
        rank, key, value = SECTIONS[m.group(1)], m.group(2).replace("_", "-"), ast.literal_eval(m.group(3))
        if rank >= found.get(key, (-1, None))[0]:
            found[key] = (rank, value)
    return {key: value for key, (_, value) in found.items()}


def uv_options(settings):
    """(uv's options, environment variables, None) carrying pip's settings over, or (None, None, why not) where one of
    them has no counterpart here."""
    args, env = [], {}
    for key, value in settings.items():
        values = str(value).split()
        if key in IGNORED:
            continue
        if key in ("index-url", "extra-index-url", "find-links", "constraint"):
            for v in values:
                args += [f"--{key}", v]
        elif key == "trusted-host":
            for v in values:
                args += ["--allow-insecure-host", v]
        elif key == "no-index":
            if str(value).lower() in ("1", "true", "yes", "on"):
                args.append("--no-index")
        elif key == "cert":
            env["SSL_CERT_FILE"] = os.environ.get("SSL_CERT_FILE", str(value))
        elif key in ("timeout", "default-timeout"):
            env["UV_HTTP_TIMEOUT"] = str(value)
        else:
            return None, None, f"pip's setting {key}={value!r} has no uv counterpart here"
    return args, env, None


def _run(cmd, env=None):
    return subprocess.run(cmd, env={**os.environ, **(env or {})}).returncode


def install_with_uv(requirements, python=sys.executable):
    """Install requirements.txt (and the newest pip, for `make aot`) with uv; None where that worked, else why not."""
    if os.environ.get("LABKIT_INSTALLER") == "pip":
        return "LABKIT_INSTALLER=pip"
    settings = pip_settings(python)
    if settings is None:
        return "`pip config list` failed"
    args, env, why_not = uv_options(settings)
    if why_not:
        return why_not
    if _run([python, "-m", "pip", "install", "-q", UV]) != 0:
        return f"pip could not install {UV}"
    rc = _run(
        [python, "-m", "uv", "pip", "install", "-q", "--python", python, "--compile-bytecode"]
        + ["--index-strategy", "unsafe-best-match", *args, "--upgrade-package", "pip", "-r", requirements, "pip"],
        env,
    )
    return None if rc == 0 else f"uv pip install failed (exit status {rc})"


def install_with_pip(requirements, python=sys.executable):
    """pip's way: the newest pip, then requirements.txt, byte-compiled whatever PIP_NO_COMPILE says."""
    rc = _run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"])
    return rc or _run([python, "-m", "pip", "install", "-q", "--compile", "-r", requirements])


def main(argv=None):
    requirements = (argv or sys.argv[1:] or ["requirements.txt"])[0]
    print(f"installing {requirements} into {sys.prefix}", flush=True)
    why_not = install_with_uv(requirements)
    if why_not is None:
        return 0
    print(f"installing with pip: {why_not}", flush=True)
    return install_with_pip(requirements)


if __name__ == "__main__":
    sys.exit(main())
