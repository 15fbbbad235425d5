"""No absolute path of one machine in committed code, configs, docs or results.

Every text file git tracks is scanned for an absolute path under a top-level folder where machines keep
users' files, checkouts, data or tools (/work, /home, /tmp, /scratch, ...): such a path works on one machine
only (a semaphore in /work/bin, a worktree, a data mirror). Paths inside the repository are written relative
to it; a dataset is found through $REPLICATIONS_MIRROR / $REPLICATIONS_CACHE; a benchmark that must run alone
takes shared.exclusive's lock. A path starting right after a word character, '.', '/', ':', ')' or '}' is
not a root path (a URL, ``$(VENV)/bin/python``, ``${HOME}/...``), nor is ``~/...``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("work", "workspace", "home", "root", "Users", "tmp", "var", "scratch", "mnt", "media", "data", "srv",
         "nfs", "gpfs", "lustre", "opt", "usr", "etc", "bin", "sbin", "lib", "run", "proc", "sys", "dev",
         "private", "Volumes", "content", "kaggle", "shared", "cache")
ABSOLUTE = re.compile(r"(?<![\w.\-/:~$)}\\])/(?:" + "|".join(ROOTS) + r")(?:/[\w.\-+@%]*)+")
# The same on every Linux machine, or a deliberate example; each one explained.
ALLOWED_PREFIXES = (
    "/dev/null",     # shell redirections
    "/usr/bin/env",  # shebangs
    "/bin/bash",     # Makefile SHELL
    "/proc/",        # kernel interface, read (shared/runinfo.py: /proc/cpuinfo)
    "/sys/",         # kernel interface: tests/test_bad_input.py's folder that can never be written
    "/usr/sbin",     # where Debian installs daemons (slurmctld, slurmd, munged: tests/slurm_cluster.py, .ci/run)
    "/bin/true",     # slurm.conf's MailProg that sends nothing (tests/slurm_cluster.py)
    "/run/munge/",   # Debian munge's system socket, used when no munged of the test's own can start
)
ALLOWED_IN = {  # (file, path): a placeholder for a folder the reader picks, or an input a test rewrites
    ("conf/paths/default.yaml", "/scratch/r"),  # e.g. paths.results_dir=/scratch/r
    ("tests/test_provenance.py", "/scratch/jobs/shards/acm12"),  # a foreign path portable_paths must shorten
}
SKIP = {".gitignore", "tests/test_no_machine_paths.py"}  # .gitignore's /x is repository-relative; this file names them


def machine_paths() -> list[str]:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    found = []
    for name in files.decode().split("\0"):
        path = REPO / name
        if not name or name in SKIP or not path.is_file():
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):  # images, archives: not text
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for match in ABSOLUTE.finditer(line):
                value = match.group(0)
                if value.startswith(ALLOWED_PREFIXES) or (name, value) in ALLOWED_IN:
                    continue
                found.append(f"{name}:{number}: {value}")
    return found


def test_the_pattern_finds_machine_paths_and_skips_urls_and_relative_ones():
    hits = lambda s: [m.group(0) for m in ABSOLUTE.finditer(s)]  # noqa: E731
    assert hits("run it under /work/bin/heavy-exclusive") == ["/work/bin/heavy-exclusive"]
    assert hits('Path("/home/ann/data/DBLP")') == ["/home/ann/data/DBLP"]
    assert hits("`python -m shared.sweep /tmp/x/multirun`") == ["/tmp/x/multirun"]
    assert not hits("https://example.org/home/x file:///tmp/y $(VENV)/bin/python ~/.cache/replications "
                    "outputs/results/rep 10 ms/step ${HOME}/work/x")


def test_no_committed_file_names_a_path_outside_the_repository():
    found = machine_paths()
    assert not found, ("absolute paths of one machine (write them relative to the repository, use "
                       "$REPLICATIONS_MIRROR / $REPLICATIONS_CACHE, or shared.exclusive for a benchmark that "
                       "runs alone):\n" + "\n".join(found))
