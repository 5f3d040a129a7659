"""Rank discovery, Slurm host lists and one-line errors."""

from __future__ import annotations

import pytest

from perfgate.errors import ConfigError
from perfgate.workload.runtime import expand_nodelist, one_line_error, rank_info


def test_torchrun_variables_win_over_slurm() -> None:
    env = {
        "RANK": "5",
        "WORLD_SIZE": "16",
        "LOCAL_RANK": "5",
        "SLURM_PROCID": "0",
        "SLURM_NTASKS": "2",
        "SLURM_LOCALID": "0",
    }
    info = rank_info(env)
    assert (info.rank, info.world_size, info.local_rank, info.source) == (5, 16, 5, "torch")
    assert not info.is_rank0


def test_slurm_variables_when_no_torchrun() -> None:
    info = rank_info({"SLURM_PROCID": "9", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1"})
    assert (info.rank, info.world_size, info.local_rank, info.source) == (9, 16, 1, "slurm")
    assert info.env() == {"RANK": "9", "WORLD_SIZE": "16", "LOCAL_RANK": "1"}


def test_single_process_without_either() -> None:
    info = rank_info({})
    assert (info.rank, info.world_size, info.local_rank, info.source) == (0, 1, 0, "single")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RANK": "x", "WORLD_SIZE": "2"}, "environment variable RANK='x' is not an integer"),
        (
            {"SLURM_PROCID": "4", "SLURM_NTASKS": "4"},
            "environment variable SLURM_PROCID=4 is not below SLURM_NTASKS=4",
        ),
    ],
)
def test_bad_rank_variables_are_one_line_errors(env, message) -> None:
    with pytest.raises(ConfigError) as e:
        rank_info(env)
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("nodelist", "names"),
    [
        ("", []),
        ("node1", ["node1"]),
        ("gpu[001-003,007]", ["gpu001", "gpu002", "gpu003", "gpu007"]),
        ("a[1-2],b3,c[08-10]", ["a1", "a2", "b3", "c08", "c09", "c10"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
    ],
)
def test_slurm_hostlists_expand_like_scontrol(nodelist, names) -> None:
    assert expand_nodelist(nodelist) == names


def test_one_line_error_redacts_tokens_and_joins_lines(monkeypatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_" + "Z" * 34)
    err = RuntimeError("401 for token hf_" + "Z" * 34 + "\n  at line 3")
    assert one_line_error(err) == "RuntimeError: 401 for token *** at line 3"


def test_one_line_error_names_the_first_error_of_a_failed_cleanup() -> None:
    try:
        try:
            raise AssertionError("Torch not compiled with CUDA enabled")
        except AssertionError:
            raise ImportError("megatron-core was not found") from None
    except ImportError as e:
        assert one_line_error(e) == "ImportError: megatron-core was not found"  # `from None`
    try:
        try:
            raise AssertionError("Torch not compiled with CUDA enabled")
        except AssertionError:
            raise ImportError("megatron-core was not found")  # noqa: B904  (the case under test)
    except ImportError as e:
        assert one_line_error(e) == (
            "AssertionError: Torch not compiled with CUDA enabled "
            "(then, while handling it: ImportError: megatron-core was not found)"
        )
