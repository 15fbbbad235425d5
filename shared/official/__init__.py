"""The authors' own code, run at a pinned commit on the suite's data and seeds (issue 28): the
``authors_code_run`` reference the suite can produce itself where the published table cannot be read.

``python -m shared.official <paper> dataset=<d> [seeds=1,2] [jobs=N]`` (``make official-<paper> dataset=<d>``)
reads the ``official:`` block of replications/<paper>/paper.yaml (repository, pinned commit, adapter module, pinned
requirements, patch files, the suite model it stands for, and per dataset the seeds, a command and a timeout),
then:

1. checks the pinned commit out into ``<cache>/official/<paper>-<commit[:12]>/checkout`` (a fresh clone each
   time, of ``repository`` or, offline, of the checkout or bare git dir ``$OFFICIAL_CODE_DIR``) and applies the
   patch files with ``git apply``;
2. makes the venv ``<cache>/official/<paper>-<commit[:12]>/venv`` with the suite's python: ``torch==2.13.0``
   under the suite's constraints (the local CPU wheel here) and the pinned requirements, never into .venv;
3. calls the adapter's ``prepare(dataset, data_dir, checkout)``, which writes the suite's dataset into the layout
   the official code reads (``data_dir`` is a fresh folder in the cache);
4. runs the command once per seed in the checkout (placeholders {python} {seed} {data_dir} {out_dir}, through
   bash; ``jobs=N``: N seeds at once), its stdout+stderr kept as outputs/official/<paper>/<dataset>/seed<s>.log, and the adapter's
   ``parse(stdout, out_dir, seed)`` turns what it printed into the suite's metric names and units;
5. writes ``results/<paper>/<dataset>/official.json`` (atomic) only when every seed succeeded. A narrowed run
   (``seeds=`` a subset of the plan) writes its record beside the logs instead, never over the committed one.
   Each finished seed is kept at once in ``official.partial.json`` beside the logs (``resume``): the same command
   after an interruption runs only the seeds still missing, when commit, patches, command, adapter and packages
   are unchanged.

A non-zero exit, a timeout or a parse failure is one line naming the seed and its log (exit 2) and writes no
record. shared.reference reads every official.json as the authors_code_run reference of its ``model``.

Modules: ``spec`` (the paper.yaml block), ``runner`` (checkout, venv, runs, record; the command line), ``resume``
(the finished seeds of an interrupted run),
``compare`` (an official record against the suite's record of the same model, seed by seed). This package's
top level holds only the errors an adapter raises, so that importing it costs nothing.

The adapter is the one module of the paper package this file loads, by the name paper.yaml gives (importlib),
as Hydra loads a configured target; nothing here imports a paper package by name.

Tests only: ``runner.run(..., python=...)`` runs the command with a given interpreter instead of building the venv
(a fake official repository that needs no packages); the record then says so under ``interpreter``.
"""

from __future__ import annotations


class OfficialError(Exception):
    """Anything that stops an official run: one line saying what is wrong and how to fix it (exit 2)."""


class OfficialParseError(OfficialError):
    """The adapter's parse() found no metrics in what the official code printed or saved."""
