"""Provenance: a result file rewritten by the protocol does not make the code 'dirty'; an edited source file does."""

from __future__ import annotations

import subprocess

import torch
from omegaconf import OmegaConf

from shared.runinfo import ONEDNN_ISAS, cpu_flags, environment, onednn_isa, precision_of


def _git(repo, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True)


def test_dirty_flag_ignores_results_but_not_code(tmp_path, monkeypatch):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "init")
    monkeypatch.chdir(tmp_path)
    assert environment()["git_dirty"] is False
    (tmp_path / "results" / "r.json").write_text('{"new": 1}')
    assert environment()["git_dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert environment()["git_dirty"] is True


def test_cpu_flags_keep_the_kernel_selecting_ones_sorted():
    cpuinfo = "processor\t: 0\nflags\t\t: fpu sse2 fma avx2 avx512f avx512bw amx_tile amx_bf16 sha_ni avx512_bf16\n"
    assert cpu_flags(cpuinfo) == ["amx_bf16", "amx_tile", "avx2", "avx512_bf16", "avx512bw", "avx512f", "fma"]
    assert cpu_flags("no flags line\n") == []


SAPPHIRE = ["amx_bf16", "amx_int8", "amx_tile", "avx2", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx512bw",
            "avx512dq", "avx512f", "avx512vl", "avx_vnni", "fma"]


def test_onednn_isa_from_flags_and_its_cap():
    assert onednn_isa(SAPPHIRE) == "avx512_core_amx"
    assert onednn_isa([f for f in SAPPHIRE if not f.startswith("amx")]) == "avx512_core_fp16"
    assert onednn_isa(["avx2", "avx512_bf16", "avx512_vnni", "avx512bw", "avx512dq", "avx512f", "avx512vl", "fma"]) \
        == "avx512_core_bf16"
    assert onednn_isa(["avx2", "fma"]) == "avx2" and onednn_isa([]) == "below_avx2"
    # ONEDNN_MAX_CPU_ISA caps it (the re-run: AMX hardware, avx512_core_bf16 kernels); a higher cap is no-op
    assert onednn_isa(SAPPHIRE, "AVX512_CORE_BF16") == "avx512_core_bf16"
    assert onednn_isa(SAPPHIRE, "AVX10_1_512_AMX") == "avx512_core_amx" == onednn_isa(SAPPHIRE, "ALL")
    assert onednn_isa(["avx2", "fma"], "AVX512_CORE_AMX") == "avx2"


def test_environment_records_what_the_numerics_depend_on():
    n = environment(precision="bf16")["numerics"]
    assert set(n) == {"cpu_flags", "onednn_isa", "onednn_bf16_matmul", "cpu_capability", "precision", "env"}
    assert n["precision"] == "bf16" and n["cpu_flags"] == sorted(n["cpu_flags"])
    assert n["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    if n["cpu_flags"]:  # x86 Linux
        assert n["onednn_isa"] in ONEDNN_ISAS


def test_precision_of_a_config():
    assert precision_of(OmegaConf.create({"model": {"precision": "bf16"}, "paper": {}})) == "bf16"  # mmlayout
    assert precision_of({"model": {}, "paper": {"protocol": {"precision": "bf16"}}}) == "bf16"  # evomoe_gpu
    assert precision_of({"model": {"lr": 0.1}, "paper": {"protocol": {}}}) == "fp32"
