"""Parsing sacct, squeue and scontrol as Slurm 22.05 prints them."""

from __future__ import annotations

from perfgate.launch.slurmstate import parse_duration, parse_sacct, parse_scontrol, parse_squeue


def test_durations():
    assert parse_duration("00:01:00") == 60
    assert parse_duration("1-02:03:04") == 86400 + 7384
    assert parse_duration("05:30") == 330
    assert parse_duration("UNLIMITED") is None
    assert parse_duration("") is None


def test_sacct_lines():
    text = (
        "7|perfgate-a|RUNNING|None|n[1-2]|00:00:20|00:02:00|0:0\n"
        "8|perfgate-b|CANCELLED by 0|None|n3|00:00:05|00:02:00|0:15\n"
        "9|perfgate-c|PENDING|Resources|None assigned|00:00:00|00:30:00|0:0\n"
    )
    info = parse_sacct(text)
    assert info["7"].state == "RUNNING" and info["7"].time_left_s == 100
    assert info["8"].state == "CANCELLED" and info["8"].terminal
    assert info["9"].reason == "Resources" and info["9"].active and info["9"].time_left_s is None


def test_squeue_lines():
    info = parse_squeue(
        "12|perfgate-x|RUNNING|None|n4|1:30|0:30\n13|perfgate-y|PENDING|Priority||30:00|0:00\n"
    )
    assert info["12"].time_left_s == 90 and info["12"].nodes == "n4"
    assert info["13"].reason == "Priority" and info["13"].source == "squeue"


def test_scontrol_line():
    line = (
        "JobId=1 JobName=j.sh UserId=root(0) GroupId=root(0) JobState=PENDING "
        "Reason=BeginTime Dependency=(null) Requeue=1 Restarts=1 BatchFlag=1 ExitCode=0:0 "
        "RunTime=00:00:00 TimeLimit=00:01:00 NodeList=(null)"
    )
    info = parse_scontrol(line)
    assert info.state == "PENDING" and info.restarts == 1 and info.reason == "BeginTime"
    assert info.nodes is None
    assert parse_scontrol("slurm_load_jobs error: Invalid job id specified") is None
