"""The student's walk, in a real browser: JupyterLab started as `make lab` starts it, notebook 01 run from its menu,
a kernel edited and saved in JupyterLab's own editor, a cell re-run, a typo's short error, an exercise graded.

Playwright drives the system's Chromium (Debian's `chromium`, through executable_path: no browser download),
headless, against a JupyterLab on a loopback port with a token, serving a throw-away copy of the kit with Jupyter
settings of its own (windowingMode "none": JupyterLab then renders every cell of a long notebook, not just the
visible ones). Every step is asserted on what the page shows. On failure a screenshot and the page's text are saved
where the failure message says. Skipped, with the reason, where Chromium or Playwright is missing (.ci/run installs
both)."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import sync_playwright
except ImportError:
    sync_playwright = None

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or sync_playwright is None,
    reason="needs Debian's chromium and Playwright for Python (pip install playwright)",
)

TOKEN = "labkit-browser-test"
TRY_IT = "print(ops.add2(torch.ones(4), torch.full((4,), 10.0)))"  # notebook 01's "try it yourself" cell
EX1_CHECK = '_ = check("ex1_add2_tail")'


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on a copy of the kit, started as `make lab` starts it; yields (base URL, the copy)."""
    kit = tmp_path / "kit"
    for part in ("kernels", "kit", "building", "notebooks", "exercises"):
        shutil.copytree(ROOT / part, kit / part, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    shutil.copy2(ROOT / "loader.py", kit / "loader.py")
    settings = tmp_path / "settings"
    # the notification settings (no Jupyter-news pop-up) come from the kit's .jupyter/labconfig, as under `make lab`
    for plugin, values in {"notebook-extension/tracker": {"windowingMode": "none"}}.items():
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        f"--ServerApp.root_dir={kit}",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        f"--IdentityProvider.token={TOKEN}",
        f"--LabApp.user_settings_dir={settings}",
        *(["--allow-root"] if os.getuid() == 0 else []),
        "notebooks/01_add2.ipynb",
    ]
    log = open(tmp_path / "jupyterlab.log", "w")
    env = {
        **os.environ,
        "PYTHONPATH": str(kit),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_CONFIG_PATH": str(ROOT / ".jupyter"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "LABKIT_BUILD_DIR": str(tmp_path / "build"),
    }
    server = subprocess.Popen(cmd, cwd=kit, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        yield f"http://127.0.0.1:{port}", kit
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


class Student:
    """What a student does in JupyterLab, each step waiting for what the page shows."""

    def __init__(self, page, base):
        self.page, self.base = page, base

    def open_notebook(self, path):
        deadline = time.time() + 60
        while True:  # the server may still be starting
            try:
                self.page.goto(f"{self.base}/lab/tree/{path}?token={TOKEN}")
                break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(1)
        self.page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=120_000)
        self.page.get_by_text("| Idle").wait_for(timeout=120_000)  # the kernel has started

    def menu(self, top, item):
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}")).first.click()

    def current(self):
        """The panel of the current tab of the main area (a notebook or a file editor)."""
        tab = self.page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current").first
        return self.page.locator(f"[id='{tab.get_attribute('data-id')}']")

    def prompts(self):
        return self.current().locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()

    def wait_all_ran(self, timeout=600):
        deadline = time.time() + timeout
        while time.time() < deadline:
            prompts = self.prompts()
            if prompts and all(re.fullmatch(r"\[\d+\]:", p.strip()) for p in prompts):
                return prompts
            time.sleep(1)
        raise AssertionError(f"not every cell ran within {timeout} s: prompts {self.prompts()}")

    def cell(self, source):
        return self.current().locator(".jp-CodeCell", has=self.page.locator(".cm-content", has_text=source)).first

    def output(self, cell):
        return "\n".join(cell.locator(".jp-OutputArea-output").all_inner_texts())

    def run_cell(self, source, timeout=180):
        """Click into the cell, Shift+Enter, wait for its new execution count; returns its output text."""
        cell = self.cell(source)
        cell.scroll_into_view_if_needed()
        before = cell.locator(".jp-InputPrompt").inner_text().strip()
        cell.locator(".cm-content").click()
        self.page.keyboard.press("Shift+Enter")
        deadline = time.time() + timeout
        while time.time() < deadline:
            now = cell.locator(".jp-InputPrompt").inner_text().strip()
            if re.fullmatch(r"\[\d+\]:", now) and now != before:
                return self.output(cell)
            time.sleep(0.2)
        raise AssertionError(f"the cell {source!r} did not finish in {timeout} s")

    def open_file(self, path):
        """File > Open from Path..., as a student opens a kernel file in JupyterLab's editor."""
        self.menu("File", "Open from Path")
        dialog = self.page.locator(".jp-Dialog")
        dialog.locator("input").fill(path)
        dialog.locator("input").press("Enter")
        self._wait_current(Path(path).name)
        self.current().locator(".cm-content").wait_for()

    def replace_in_editor(self, old, new):
        """The editor's own search and replace (Ctrl+F), then Ctrl+S, waiting until the tab is no longer dirty."""
        editor = self.current()
        editor.locator(".cm-content").click()
        self.page.keyboard.press("Control+f")
        search = self.page.locator(".jp-DocumentSearch-overlay")
        search.get_by_placeholder("Find").fill("")  # the box keeps the last search: clear it, then type
        search.get_by_placeholder("Find").press_sequentially(old)
        search.get_by_text("1/1").wait_for()  # one match, and only one
        if not search.get_by_placeholder("Replace").is_visible():
            search.locator(".jp-DocumentSearch-replace-toggle").click()
        search.get_by_placeholder("Replace").fill("")
        search.get_by_placeholder("Replace").press_sequentially(new)  # typed, key by key
        search.get_by_role("button", name="Replace", exact=True).click()
        editor.locator(".cm-line", has_text=new).first.wait_for()  # the editor shows the new text
        self.page.keyboard.press("Escape")
        editor.locator(".cm-content").click()
        self.page.keyboard.press("Control+s")
        self.page.wait_for_function("() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')")

    def to_tab(self, name):
        self.page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text=name).click()
        self._wait_current(name)

    def _wait_current(self, name):
        self.page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current", has_text=name).wait_for()


def test_the_students_walk_in_jupyterlab(lab, tmp_path):
    base, kit = lab
    t0 = time.time()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        student = Student(page, base)
        try:
            # open notebook 01 and run every cell from the Run menu; no cell shows an error
            student.open_notebook("notebooks/01_add2.ipynb")
            student.menu("Run", "Run All Cells")
            prompts = student.wait_all_ran()
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            texts = [t for t in errors.all_inner_texts() if re.search(r"Traceback|Error\b", t)]
            assert not texts, f"cells show errors after Run All Cells: {texts}"
            assert "tensor([11., 11., 11., 11.])" in student.output(student.cell(TRY_IT))
            assert "FAIL" in student.output(student.cell(EX1_CHECK)), "the untouched stub of exercise 1 must fail"
            ran_all = time.time() - t0

            # edit the CPU kernel in JupyterLab's editor, save with the keyboard, re-run "try it yourself"
            student.open_file("kernels/add2/add2_cpu.cpp")
            student.replace_in_editor("+ load(b", "- load(b")
            student.to_tab("01_add2.ipynb")
            out = student.run_cell(TRY_IT)
            assert "tensor([-9., -9., -9., -9.])" in out, out
            assert "rebuilt for CPU" in out and "compiled add2_cpu.cpp" in out, out

            # a typo: the cell shows the short compile error, naming the file and line, and no loader frames
            student.to_tab("add2_cpu.cpp")
            student.replace_in_editor("- load(b", "- lod(b")
            student.to_tab("01_add2.ipynb")
            out = student.run_cell(TRY_IT)
            assert re.search(r"CompileError: add2 failed to compile: add2_cpu\.cpp:\d+: error: .*lod", out), out
            assert "Traceback" not in out and "loader.py" not in out, out

            # fixed: the right result again
            student.to_tab("add2_cpu.cpp")
            student.replace_in_editor("- lod(b", "+ load(b")
            student.to_tab("01_add2.ipynb")
            assert "tensor([11., 11., 11., 11.])" in student.run_cell(TRY_IT)

            # an exercise: its check says FAIL on the stub (above), PASS once the solution's line is typed in
            student.open_file("exercises/ex1_add2_tail/ex1_add2_tail.h")
            student.replace_in_editor("int64_t n) {", "int64_t n) { if (i < n) c[i] = a[i] + b[i];")
            student.to_tab("01_add2.ipynb")
            out = student.run_cell(EX1_CHECK)
            assert "PASS  matches a + b on cpu" in out and "FAIL" not in out, out
            print(
                f"browser walk: Run All Cells on notebook 01 ({len(prompts)} code cells) in {ran_all:.0f} s, "
                f"the whole walk in {time.time() - t0:.0f} s",
                file=sys.stderr,
            )
        except BaseException:
            shot, text = tmp_path / "failure.png", tmp_path / "failure.txt"
            page.screenshot(path=str(shot), full_page=True)
            text.write_text(page.inner_text("body"))
            print(f"browser test failed: screenshot {shot}, page text {text}", file=sys.stderr)
            raise
        finally:
            browser.close()
