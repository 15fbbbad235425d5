"""A real one-node SLURM cluster for the tests (issue 41), from the daemons already installed: nothing is installed here.

The ``slurm_cluster`` fixture (module scope; a test module imports ``slurm_cluster_fixture`` to use it) starts
``munged`` with a key and socket of its own, then ``slurmctld`` and ``slurmd`` on a ``slurm.conf`` written for this
host, all in one temporary folder; it yields once ``sinfo`` shows the node idle, and at teardown cancels its jobs and
stops exactly the three processes it started, by their PIDs. A SLURM client (sbatch, submitit) reaches this cluster
through ``SLURM_CONF`` (``SlurmCluster.env``); the munge socket is named in the conf (``AuthInfo``), so no system
service is used or disturbed. Without the packages the test skips with the apt command; CI installs them (.ci/run).
Checked with Debian 12's Slurm 22.05 and munge 0.5.15, as root: ~1 s from start to an idle node.

The conf is the smallest that runs jobs without cgroups or a database: ``proctrack/linuxproc`` and ``task/none`` (no
cgroup.conf), no accounting (submitit then warns that ``sacct`` failed, harmlessly: it finds a finished job by its
result file), the node named ``localhost`` (``slurmd -N localhost``: the host's own name may be anything).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DAEMONS = ("slurmctld", "slurmd")  # and munged, or a system munged already running
CLIENTS = ("sinfo", "sbatch", "srun", "squeue", "scancel")
INSTALL = "apt-get install -y slurm-wlm munge"
PARTITION = "pytest"
NODE = "localhost"
START_S = 60  # bound on daemons -> idle node; ~1 s on a quiet 2-core machine


def find(name: str) -> str | None:
    """A daemon lives in /usr/sbin, which a non-root PATH often lacks."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_mb() -> int:
    """Total memory in MB (slurmd drains a node configured with more than it has)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 2048


@dataclass
class SlurmCluster:
    root: Path  # the temporary folder holding conf, state, spool, socket and logs
    conf: Path
    partition: str = PARTITION
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """This process's environment pointed at this cluster. SLURM_* variables of an enclosing job (pytest itself run
        under SLURM) are dropped: submitit would take this process for a job of that other cluster."""
        return {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, timeout: float = 20) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def logs(self, lines: int = 15) -> str:
        """The last lines of every daemon's log, for a failure message."""
        out = []
        for name in self.procs:
            text = (self.root / "log" / f"{name}.log").read_text(errors="replace").splitlines()
            out.append(f"--- {name} (pid {self.procs[name].pid}):\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def start(self, name: str, *args: str) -> None:
        """Run a daemon in the foreground (-D/-F), so the PID we hold is the daemon's own, not a forked parent's."""
        with open(self.root / "log" / f"{name}.log", "w") as log:  # the child keeps its own copy of the file
            self.procs[name] = subprocess.Popen([find(name) or name, *args], env=self.env, stdout=log,
                                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def died(self) -> str | None:
        return next((f"{n} exited ({p.returncode})" for n, p in self.procs.items() if p.poll() is not None), None)

    def stop(self) -> None:
        """Cancel this cluster's jobs (their slurmstepd would outlive slurmd), then stop what we started, newest first."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                self.run("scancel", f"--partition={self.partition}")
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline and self.run("squeue", "-h", f"--partition={self.partition}").stdout.strip():
                    time.sleep(0.5)
            except (OSError, subprocess.SubprocessError):
                pass  # stopping the daemons matters more
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)


def write_conf(root: Path, munge_socket: Path) -> Path:
    """Daemons in the foreground log to stderr (our log files), so no log file is configured."""
    cpus = len(os.sched_getaffinity(0))
    ctld_port, d_port = free_port(), free_port()  # not 6817/6818: a system slurm may hold them
    conf = root / "slurm.conf"
    conf.write_text(f"""ClusterName=pytest
SlurmctldHost={NODE}
SlurmUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
NodeName={NODE} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={min(4096, memory_mb() // 2)} State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""")
    return conf


def start_munge(cluster: SlurmCluster) -> Path:
    """munged with its own key and socket. munged refuses a socket in a folder not executable by all (up to /): hence
    the 0755 folders (pytest's own tmp folders are 0700)."""
    keydir, sockdir = cluster.root / "munge-key", cluster.root / "munge"
    keydir.mkdir(mode=0o700)
    sockdir.mkdir(mode=0o755)
    key = keydir / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = sockdir / "munge.socket"
    cluster.start("munged", "-F", f"--key-file={key}", f"--socket={sock}", f"--pid-file={sockdir}/munged.pid",
                  f"--seed-file={keydir}/munged.seed")
    deadline = time.monotonic() + 10
    while not sock.exists() and cluster.died() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if not sock.exists():
        pytest.fail(f"munged did not create its socket {sock}:\n{cluster.logs()}")
    return sock


def wait_idle(cluster: SlurmCluster) -> None:
    deadline = time.monotonic() + START_S
    state = ""
    while time.monotonic() < deadline and cluster.died() is None:
        shown = cluster.run("sinfo", "-h", "-N", "-o", "%t", f"--partition={cluster.partition}")
        state = shown.stdout.strip() or shown.stderr.strip()
        if state == "idle":
            return
        time.sleep(0.5)
    why = cluster.died() or f"node still '{state}' after {START_S} s"
    pytest.fail(f"the test SLURM cluster did not come up: {why}\n{cluster.logs()}")


SYSTEM_MUNGE = Path("/run/munge/munge.socket.2")  # without munged here, a system munged already running will do


def unavailable() -> str | None:
    """Why no cluster can be started here (one line: what to install), or None."""
    missing = [n for n in (*DAEMONS, *CLIENTS) if not find(n)]
    if not find("munged") and not SYSTEM_MUNGE.exists():
        missing.insert(0, "munged")
    if missing:
        return f"no SLURM here ({', '.join(missing)} not found): {INSTALL}"
    if os.geteuid() != 0:  # slurmd launches a job as its user, which takes root; SlurmUser=root below
        return "the SLURM test starts slurmd, which must run as root: run it as root (CI does)"
    return None


@pytest.fixture(scope="module", name="slurm_cluster")  # a test module imports slurm_cluster_fixture, asks for slurm_cluster
def slurm_cluster_fixture() -> Iterator[SlurmCluster]:
    why = unavailable()
    if why:
        pytest.skip(why)
    # Under /tmp, not pytest's tmp folder: munged's permission rule (start_munge) and a unix socket's 108-byte path.
    root = Path(tempfile.mkdtemp(prefix="slurm-", dir="/tmp"))
    root.chmod(0o755)
    for sub in ("state", "spool", "log"):
        (root / sub).mkdir()
    cluster = SlurmCluster(root=root, conf=root / "slurm.conf")
    try:
        write_conf(root, start_munge(cluster) if find("munged") else SYSTEM_MUNGE)
        cluster.start("slurmctld", "-D", "-i")  # -i: a fresh state folder has no state files to recover
        cluster.start("slurmd", "-D", "-N", NODE)
        wait_idle(cluster)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
