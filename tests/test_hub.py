"""A class on one server: the hub of hub/jupyterhub_config.py, started as `make hub` starts it (the
quick-start mode: one account, a home per student), on loopback ports, with the students' shared password made up
here. The hub warms the class's compiler cache with add2 as it starts (LABKIT_HUB_WARM). Four students log in
through the hub's REST API, start their servers, and in each, through a kernel of their own (the Jupyter server's REST
API and its websocket kernel protocol, through the hub's proxy), build add2 from that cache, edit
their own kernels/add2/add2_cpu.cpp (through the contents API, as JupyterLab saves) so that add2 computes a + k*b with
a k of their own, and see the new result; then each student's files and build folder are their own and nobody's
result changed. One student's kernel aborts, another's runs an endless loop, a third allocates past its memory limit:
only they notice. Last, `python -m hub.collect` grades the class: the students who solved exercise 1 pass, the others
fail. Every result is checked against PyTorch's own computation here.

Per student it records the time to start, build, rebuild and the peak resident memory of their server's process
tree (server, kernels, compilers), printed and written to class.json in the test's folder. Everything the hub
started is stopped at the end, and the test fails if any of it is left running."""

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from conftest import ROOT

from building import compiler_cache

pytest.importorskip("jupyterhub", reason="needs JupyterHub (pip install jupyterhub; in requirements.txt)")
pytest.importorskip(
    "configurable_http_proxy",
    reason="needs the Python configurable-http-proxy (pip install configurable-http-proxy; in requirements.txt)",
)
psutil = pytest.importorskip("psutil", reason="needs psutil (in requirements.txt)")
requests = pytest.importorskip("requests")
websocket = pytest.importorskip("websocket", reason="needs websocket-client (comes with jupyter_server)")
from jupyter_client.jsonutil import json_default  # noqa: E402
from jupyter_client.session import Session  # noqa: E402

STUDENTS = {"ada": 2, "bo": 3, "cy": 4, "di": 5}  # each student's edit: add2 computes a + k*b
SOLVE_EX1 = {"ada", "bo"}  # they solve exercise 1; the others leave its stub
# a build setting the hub passes on to every student's server and to its warm (the GPU machine's image sets it)
ARCH_LIST = os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0")
CPU_KERNEL = "kit/kernels/add2/add2_cpu.cpp"
EX1_STUB = "kit/exercises/ex1_add2_tail/ex1_add2_tail.h"
INPUTS = "a = torch.arange(1000, dtype=torch.float32) / 8; b = torch.linspace(-3, 3, 1000)"
CALL = (
    "t = time.perf_counter(); c = ops.add2(a, b); s = time.perf_counter() - t\n"
    "print(json.dumps({'c': c.tolist(), 's': s}))"
)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _expected(k):
    namespace = {"torch": torch}
    exec(INPUTS, namespace)  # the same inputs as in the students' kernels
    return namespace["a"] + k * namespace["b"]


class Hub:
    """The running hub: its URL, its folder, and every process it started (sampled until the end)."""

    def __init__(self, proc, url, state):
        self.proc, self.url, self.state = proc, url, state
        self.seen = {}  # pid -> psutil.Process of everything under the hub, ever
        self.peak = {}  # student -> peak RSS (bytes) of their server's process tree
        self.servers = {}  # student -> their server's psutil.Process
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self):
        while not self._stop.wait(0.2):
            try:
                for p in psutil.Process(self.proc.pid).children(recursive=True):
                    self.seen.setdefault(p.pid, p)
            except psutil.Error:
                pass
            for name, server in list(self.servers.items()):
                rss = 0
                try:
                    for p in [server, *server.children(recursive=True)]:
                        self.seen.setdefault(p.pid, p)
                        rss += p.memory_info().rss
                except psutil.Error:
                    continue
                self.peak[name] = max(self.peak.get(name, 0), rss)

    def server_of(self, name):
        """The student's server: the process under the hub whose JUPYTERHUB_USER is the student."""
        for p in psutil.Process(self.proc.pid).children():
            try:
                if p.environ().get("JUPYTERHUB_USER") == name:
                    self.servers[name] = p
                    return p
            except psutil.Error:
                pass
        raise AssertionError(f"no server process of {name} under the hub")

    def wait_for_the_warm(self, timeout=600):
        """Until the hub's warm of the compiler cache (kit/warm.py, started with the hub) has built what it was asked
        to, as an instructor waits before the class; returns its last line."""
        log, deadline = self.state / "warm.log", time.time() + timeout
        while True:
            text = log.read_text() if log.exists() else ""
            done = re.search(r"^\[warm\] (\d+) of (\d+) built.*$", text, re.M)
            if done:
                assert done.group(1) == done.group(2), f"the hub's warm failed: {text[-3000:]}"
                return done.group(0)
            assert time.time() < deadline, f"the hub's warm did not end in {timeout} s: {text[-3000:]}"
            time.sleep(0.5)

    def stop(self):
        """SIGTERM to the hub (it stops the proxy and every server, as on Ctrl-C); then kill whatever is left.
        Returns the processes that had to be killed."""
        self._stop.set()
        self._sampler.join(5)
        try:
            for p in psutil.Process(self.proc.pid).children(recursive=True):
                self.seen.setdefault(p.pid, p)
        except psutil.Error:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        left = [p for p in self.seen.values() if p.is_running()]
        gone, alive = psutil.wait_procs(left, timeout=15)
        for p in alive:
            p.kill()
        psutil.wait_procs(alive, timeout=10)
        return alive


@pytest.fixture
def hub(tmp_path):
    state = tmp_path / "hub"
    state.mkdir()
    (state / "students").write_text("\n".join(STUDENTS) + "\n")
    port = _free_port()
    password = secrets.token_urlsafe(12)
    env = {
        **os.environ,
        "LABKIT_HUB_STATE": str(state),
        "LABKIT_STUDENTS": str(state / "students"),
        "LABKIT_HUB_PASSWORD": password,
        "LABKIT_CLASS_DIR": str(tmp_path / "class"),
        # the cache warmed with the op the students build, not every op (tests/test_compiler_cache.py warms them all)
        "LABKIT_HUB_WARM": "add2",
        "TORCH_CUDA_ARCH_LIST": ARCH_LIST,
    }
    cmd = [
        sys.executable,
        "-m",
        "jupyterhub",
        "-f",
        str(ROOT / "hub" / "jupyterhub_config.py"),
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--JupyterHub.hub_port={_free_port()}",
        f"--ConfigurableHTTPProxy.api_url=http://127.0.0.1:{_free_port()}",
    ]
    log = open(tmp_path / "hub.log", "w")
    proc = subprocess.Popen(cmd, cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    running = Hub(proc, f"http://127.0.0.1:{port}", state)
    running.password = password
    try:
        deadline = time.time() + 90
        while True:
            assert proc.poll() is None, f"the hub exited: {(tmp_path / 'hub.log').read_text()[-3000:]}"
            try:
                if requests.get(running.url + "/hub/api/", timeout=5).ok:
                    break
            except requests.ConnectionError:
                pass
            assert time.time() < deadline, "the hub did not answer in 90 s"
            time.sleep(0.5)
        yield running
    finally:
        killed = running.stop()
        log.close()
        # shown where the test fails (pytest shows a test's stderr then)
        print(
            f"hub log ({tmp_path / 'hub.log'}), its end:\n{(tmp_path / 'hub.log').read_text()[-5000:]}", file=sys.stderr
        )
        assert not killed, f"still running after the hub stopped, killed: {[p.pid for p in killed]}"


class Kernel:
    """A kernel of a student's server, driven over the Jupyter server's websocket (the kernel protocol, JSON)."""

    def __init__(self, student, kernel_id):
        self.student, self.id = student, kernel_id
        self.session = Session(username=student.name)
        self.ws = None
        self.connect()

    def connect(self):
        url = f"{self.student.base.replace('http', 'ws', 1)}/api/kernels/{self.id}/channels"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {self.student.token}"], timeout=60)

    def send(self, code):
        msg = self.session.msg(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": False,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        msg["channel"] = "shell"
        self.ws.send(json.dumps(msg, default=json_default))
        return msg["header"]["msg_id"]

    def wait(self, msg_id, timeout=300):
        """(stdout and results, the error's "ename: evalue" or None) of the request, once the kernel is idle again."""
        out, error, deadline = [], None, time.time() + timeout
        while True:
            self.ws.settimeout(max(1, deadline - time.time()))
            m = json.loads(self.ws.recv())
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = m["msg_type"], m["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind == "execute_result":
                out.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out), error

    def run(self, code, timeout=300):
        out, error = self.wait(self.send(code), timeout)
        assert error is None, f"{self.student.name}'s cell failed: {error}\n{out}"
        return out

    def call_add2(self):
        """ops.add2(a, b) in the kernel: (the result as a tensor, seconds the call took, what the loader printed)."""
        *said, last = self.run(CALL).strip().splitlines()
        done = json.loads(last)
        return torch.tensor(done["c"]), done["s"], "\n".join(said)

    def wait_restarted(self, timeout=120):
        """After the kernel died: the server says so on the websocket and starts it again (its restarter); then a new
        connection, asking the kernel for its info until it answers, as jupyter_client's wait_for_ready does (a request
        sent while the new kernel is still starting may be lost)."""
        deadline = time.time() + timeout
        while True:
            self.ws.settimeout(max(1, deadline - time.time()))
            m = json.loads(self.ws.recv())
            if m["msg_type"] == "status" and m["content"]["execution_state"] in ("restarting", "dead"):
                break
        self.ws.close()
        self.connect()
        while True:
            assert time.time() < deadline, f"{self.student.name}'s kernel did not come back in {timeout} s"
            msg = self.session.msg("kernel_info_request", {})
            msg["channel"] = "shell"
            self.ws.send(json.dumps(msg, default=json_default))
            asked = time.time()
            try:
                while time.time() < asked + 2:
                    self.ws.settimeout(max(0.1, asked + 2 - time.time()))
                    m = json.loads(self.ws.recv())
                    if (
                        m["msg_type"] == "kernel_info_reply"
                        and m["parent_header"].get("msg_id") == msg["header"]["msg_id"]
                    ):
                        return
            except websocket.WebSocketTimeoutException:
                pass


class Student:
    def __init__(self, hub, name):
        self.hub, self.name, self.k = hub, name, STUDENTS[name]
        self.base = f"{hub.url}/user/{name}"
        self.home = hub.state / "homes" / name
        self.times = {}

    def api(self, method, path, hub=False, **kwargs):
        url = (f"{self.hub.url}/hub/api" if hub else self.base) + path
        r = requests.request(method, url, headers={"Authorization": f"token {self.token}"}, timeout=60, **kwargs)
        r.raise_for_status()
        return r

    def log_in_and_start(self):
        t0 = time.perf_counter()
        r = requests.post(
            f"{self.hub.url}/hub/api/users/{self.name}/tokens",
            timeout=60,
            json={"auth": {"username": self.name, "password": self.hub.password}, "note": "test"},
        )
        assert r.status_code == 201, f"{self.name} could not log in: {r.status_code} {r.text}"
        self.token = r.json()["token"]
        self.api("post", f"/users/{self.name}/server", hub=True)
        deadline = time.time() + 240
        while not self.api("get", f"/users/{self.name}", hub=True).json()["servers"].get("", {}).get("ready"):
            assert time.time() < deadline, f"{self.name}'s server did not start in 240 s"
            time.sleep(0.5)
        self.times["log in and start the server"] = time.perf_counter() - t0
        self.server = self.hub.server_of(self.name)

    def start_kernel(self):
        """A kernel in kit/notebooks, as notebook 01 has; imports the loader as its first cell does."""
        t0 = time.perf_counter()
        kid = self.api("post", "/api/kernels", json={"name": "python3", "path": "kit/notebooks"}).json()["id"]
        self.kernel = Kernel(self, kid)
        out = self.kernel.run(
            "import json, os, time, resource, torch, loader\nfrom loader import ops\n"
            + INPUTS
            + "\nprint(json.dumps({'root': str(loader.ROOT), 'build': str(ops.add2.build_dir()), "
            "'server': os.getppid(), 'pid': os.getpid(), 'max_jobs': os.environ.get('MAX_JOBS'), "
            "'arch': os.environ.get('TORCH_CUDA_ARCH_LIST'), "
            "'mem': resource.getrlimit(resource.RLIMIT_DATA)[0]}))",
            timeout=120,
        )
        self.times["start a kernel, import torch"] = time.perf_counter() - t0
        return json.loads(out.strip().splitlines()[-1])

    def edit(self, path, old, new):
        """The file changed through the contents API, as JupyterLab's editor saves it."""
        src = self.api("get", f"/api/contents/{path}", params={"type": "file", "format": "text"}).json()["content"]
        assert src.count(old) == 1, f"{path} of {self.name}: {old!r} not found once"
        self.api(
            "put", f"/api/contents/{path}", json={"type": "file", "format": "text", "content": src.replace(old, new)}
        )

    def walk(self):
        """Log in, start, build add2, edit add2_cpu.cpp to a + k*b, see the new result."""
        t0 = time.perf_counter()
        self.log_in_and_start()
        self.info = self.start_kernel()
        c, self.times["first build of add2, from the cache (in the kernel)"], out = self.kernel.call_add2()
        torch.testing.assert_close(c, _expected(1))
        assert "built for CPU" in out, out
        self.edit(CPU_KERNEL, "load(a[i]) + load(b[i])", f"load(a[i]) + {self.k} * load(b[i])")
        c, self.times["rebuild after the edit (in the kernel)"], out = self.kernel.call_add2()
        torch.testing.assert_close(c, _expected(self.k), msg=f"{self.name}'s edited add2: {out}")
        assert re.search(r"rebuilt for CPU in [\d.]+ s: compiled add2_cpu\.cpp$", out, re.M), out
        self.times["the walk"] = time.perf_counter() - t0


def test_a_class_on_one_hub(hub, tmp_path):
    warmed = hub.wait_for_the_warm()
    cache = hub.state / "compiler-cache"
    hits_before = compiler_cache.stats(cache)["hits"]
    t0 = time.perf_counter()
    students = [Student(hub, name) for name in STUDENTS]
    with ThreadPoolExecutor(len(students)) as pool:  # the whole class at once, as at the start of a lab
        for done in [pool.submit(s.walk) for s in students]:
            done.result()
    walked = time.perf_counter() - t0
    # every student's first build of add2 took its files from the cache (a binding and a CPU kernel each, and a .cu
    # file on a GPU machine), compiled as the warm compiled them: the same settings reached the students' servers
    hits = compiler_cache.stats(cache)["hits"] - hits_before
    assert hits >= 2 * len(students), f"{hits} cache hits for {len(students)} students' first builds; {warmed}"

    # each student's kit, build folder and server are their own; nobody's edit changed another's result
    for s in students:
        kit = s.home / "kit"
        assert s.info["root"] == str(kit), f"{s.name}'s kernel imports the loader of {s.info['root']}"
        assert s.info["build"].startswith(str(kit / ".build") + "/"), s.info["build"]
        assert list((kit / ".build").rglob("labkit_add2*.so")), f"no add2 library in {s.name}'s build folder"
        assert not (kit / "solutions").exists() and not (kit / "tests").exists(), "a student's kit has the answers"
        assert s.home.stat().st_mode & 0o777 == 0o700, f"{s.name}'s home is readable by others"
        assert s.info["server"] == s.server.pid, f"{s.name}'s kernel runs under another server"
        assert int(s.info["max_jobs"]) >= 1
        assert s.info["arch"] == ARCH_LIST, "the hub's build settings reach every student's server"
        assert f"{s.k} * load(b[i])" in (kit / "kernels" / "add2" / "add2_cpu.cpp").read_text()
        c, _, _ = s.kernel.call_add2()
        torch.testing.assert_close(c, _expected(s.k), msg=f"{s.name}'s add2 after everyone's edits")
    assert len({s.info["build"] for s in students}) == len(students), "students share a build folder"
    assert len({s.server.pid for s in students}) == len(students)
    assert "load(a[i]) + load(b[i])" in (ROOT / "kernels" / "add2" / "add2_cpu.cpp").read_text(), (
        "a student's edit reached the instructor's kit"
    )

    # one student's kernel aborts, another's loops forever, a third allocates past its limit: only they notice
    ada, bo, cy, di = students
    ada.kernel.send("import os; os.abort()")
    loop = bo.kernel.send("while True: pass")
    ada.kernel.wait_restarted()
    limit = cy.info["mem"]
    assert 0 < limit < psutil.virtual_memory().total, f"no memory limit on {cy.name}'s processes: {limit}"
    out, error = cy.kernel.wait(cy.kernel.send(f"x = torch.empty({limit + 2**30}, dtype=torch.uint8)"))
    assert error and "can't allocate memory" in error, f"{cy.name} allocated past the limit: {error} {out}"
    for s in (cy, di):  # while ada's kernel restarted and bo's loops
        torch.testing.assert_close(s.kernel.call_add2()[0], _expected(s.k), msg=f"{s.name} beside the others")
    bo.api("post", f"/api/kernels/{bo.kernel.id}/interrupt")
    out, error = bo.kernel.wait(loop, timeout=60)
    assert error and error.startswith("KeyboardInterrupt"), error
    torch.testing.assert_close(bo.kernel.call_add2()[0], _expected(bo.k))
    pid = json.loads(ada.kernel.run("import os, json; print(json.dumps(os.getpid()))", timeout=120))
    assert pid != ada.info["pid"], "ada's kernel did not crash"
    ada.kernel.run("import json, time, torch\nfrom loader import ops\n" + INPUTS)  # a fresh kernel: the first cell
    c, _, out = ada.kernel.call_add2()
    torch.testing.assert_close(c, _expected(ada.k), msg="ada's add2 after her kernel crashed")
    assert "loaded for CPU" in out, f"ada's build did not survive her kernel's crash: {out}"

    # the instructor grades the class: who solved exercise 1 passes, the others fail
    for s in students:
        if s.name in SOLVE_EX1:
            s.edit(EX1_STUB, "int64_t n) {\n}", "int64_t n) {\n    if (i < n) c[i] = a[i] + b[i];\n}")
    t_grade = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "hub.collect",
            "ex1_add2_tail",
            "--homes",
            str(hub.state / "homes"),
            "--to",
            str(tmp_path / "submissions"),
            "--json",
            str(tmp_path / "grades.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MAX_JOBS": "2", "LABKIT_CLASS_DIR": str(tmp_path / "class")},
    )
    graded = time.perf_counter() - t_grade
    assert r.returncode == 0, r.stdout + r.stderr
    book = json.loads((tmp_path / "grades.json").read_text())
    assert sorted(book) == sorted(STUDENTS), book.keys()
    for s in students:
        (report,) = book[s.name]
        assert report["exercise"] == "ex1_add2_tail"
        assert report["passed"] == (s.name in SOLVE_EX1) and report["failed"] == (s.name not in SOLVE_EX1), report
        row = next(line for line in r.stdout.splitlines() if line.startswith(s.name + " "))
        assert ("PASS" if s.name in SOLVE_EX1 else "FAIL") in row, r.stdout
        report = s.home / "grades" / "report.md"  # their own report, theirs alone
        assert report.stat().st_mode & 0o777 == 0o600 and f"# Grades of {s.name}" in report.read_text()
    assert (tmp_path / "grades.csv").is_file()

    record = {
        "students": {
            s.name: {
                **{k: round(v, 2) for k, v in s.times.items()},
                "peak RSS of the server's process tree (MB)": round(hub.peak[s.name] / 1e6),
                "MAX_JOBS": int(s.info["max_jobs"]),
            }
            for s in students
        },
        "the whole class's walk (s)": round(walked, 1),
        "grading the class (s)": round(graded, 1),
        "cores": os.cpu_count(),
    }
    (tmp_path / "class.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"class on one hub ({tmp_path / 'class.json'}): {json.dumps(record, indent=1)}\n{r.stdout}", file=sys.stderr)
