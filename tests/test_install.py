"""The .venv installer (building/install.py): pip's settings, as pip itself reports them, reach uv as uv's own options;
a setting uv has no counterpart for sends the install to pip before anything is installed."""

import os
import sys

import pytest

from building import install


@pytest.fixture
def pip_config(tmp_path, monkeypatch):
    """A pip configuration file of the test's own, and none of this machine's PIP_* variables."""
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "pip.conf"
    monkeypatch.setenv("PIP_CONFIG_FILE", str(path))
    return path


def test_pips_settings_become_uvs_options(pip_config, monkeypatch):
    """A mirror, two extra indexes, a host without TLS, a company's certificates, wheels in a folder and a constraint
    file: what pip reads from its configuration file and PIP_* variables, with a PIP_* variable over the file's
    [install] over its [global], as pip ranks them."""
    pip_config.write_text(
        "[global]\n"
        "index-url = https://mirror.example/simple\n"
        "extra-index-url = https://a.example/simple https://b.example/simple\n"
        "trusted-host = a.example\n"
        "cert = /etc/company.pem\n"
        "find-links = /global/wheels\n"
        "[install]\n"
        "find-links = /install/wheels\n"
        "[download]\n"
        "dest = /not/for/install\n"
    )
    monkeypatch.setenv("PIP_CONSTRAINT", "/etc/constraints.txt")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    settings = install.pip_settings(sys.executable)
    assert settings["find-links"] == "/install/wheels" and "dest" not in settings, settings
    args, env, why_not = install.uv_options(settings)
    assert why_not is None
    pairs = list(zip(args[::2], args[1::2]))
    assert sorted(pairs) == sorted(
        [
            ("--index-url", "https://mirror.example/simple"),
            ("--extra-index-url", "https://a.example/simple"),
            ("--extra-index-url", "https://b.example/simple"),
            ("--allow-insecure-host", "a.example"),
            ("--find-links", "/install/wheels"),
            ("--constraint", "/etc/constraints.txt"),
        ]
    ), args
    assert env == {"SSL_CERT_FILE": "/etc/company.pem"}


def test_a_setting_uv_lacks_sends_the_install_to_pip_before_installing_anything(pip_config, monkeypatch, tmp_path):
    """A proxy set for pip only: uv would not use it, so pip installs (and uv is not even installed)."""
    pip_config.write_text("[global]\nproxy = http://proxy.example:3128\n")
    ran = []
    monkeypatch.setattr(install, "_run", lambda cmd, env=None: ran.append(cmd) or 0)
    why_not = install.install_with_uv(str(tmp_path / "requirements.txt"))
    assert why_not == "pip's setting proxy='http://proxy.example:3128' has no uv counterpart here"
    assert ran == []


def test_labkit_installer_pip_and_a_failed_uv_each_fall_back_to_pip(pip_config, monkeypatch, tmp_path, capsys):
    pip_config.write_text("")
    ran = []
    monkeypatch.setattr(install, "_run", lambda cmd, env=None: ran.append(cmd[2:5]) or (3 if "uv" in cmd[:3] else 0))
    monkeypatch.setenv("LABKIT_INSTALLER", "pip")
    assert install.install_with_uv("requirements.txt") == "LABKIT_INSTALLER=pip" and ran == []
    monkeypatch.delenv("LABKIT_INSTALLER")
    assert install.main(["requirements.txt"]) == 0
    assert "installing with pip: uv pip install failed (exit status 3)" in capsys.readouterr().out
    # pip installed uv, uv failed, then pip upgraded itself and installed the requirements
    assert ran == [
        ["pip", "install", "-q"],
        ["uv", "pip", "install"],
        ["pip", "install", "-q"],
        ["pip", "install", "-q"],
    ]
