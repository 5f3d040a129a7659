"""The one masking rule (#29) and the one terminal rule: a secret in any form a job or a user
writes it never survives redact(), and no outside text reaches a terminal able to act on it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfgate.charset import for_terminal, one_line, printable
from perfgate.secrets import MASK, mask_tree, redact, secret_name

SECRET = "s3cr3tV4lue-Zq9"


@pytest.mark.parametrize(
    "text",
    [
        f"WANDB_API_KEY={SECRET}",
        f"export HF_TOKEN='{SECRET}'",
        f"NGC_KEY={SECRET} python train.py",
        f"AWS_SECRET_ACCESS_KEY={SECRET}",
        f"--password={SECRET}",
        f"--password {SECRET}",
        f'{{"api_key": "{SECRET}"}}',
        f"{{'client_secret': '{SECRET}'}}",
        f"db_passwd: {SECRET}",
        f'credentials: "{SECRET}"',
        f"apiKey={SECRET}",
        f"Authorization: Bearer {SECRET}",
        f"curl -H 'Authorization: token {SECRET}'",
        f"https://user:{SECRET}@github.com/org/repo.git",
        f"wandb login {SECRET}",
        f"x=WANDB_API_KEY={SECRET}",
    ],
)
def test_every_form_of_a_named_secret_is_masked(text):
    got = redact(text, environ={})
    assert SECRET not in got and MASK in got


@pytest.mark.parametrize(
    "token",
    [
        "hf_" + "a" * 34,
        "nvapi-" + "b" * 40,
        "ghp_" + "c" * 36,
        "github_pat_" + "d" * 40,
        "glpat-" + "e" * 20,
        "xoxb-123456789012-abcdef",
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0",
        "local-" + "0123456789abcdef" * 2 + "01234567",
    ],
)
def test_token_shapes_are_masked_wherever_they_stand(token):
    assert token not in redact(f"step 3 | loaded {token} from cache", environ={})


@pytest.mark.parametrize(
    "text",
    [
        "TOKENIZERS_PARALLELISM=false",
        "tokens_per_s_per_gpu=1234.5 max_tokens=4096 tokenizer: gpt2",
        "Training epoch 0, iteration 49/49 | train_step_timing in s: 2.693 | TFLOPS_per_GPU: 1.2",
        "NCCL_IB_HCA=mlx5_0 keyword=x --container-env=HF_TOKEN",
        "git commit 0123456789abcdef0123456789abcdef01234567",
        '--env "NGC_KEY=$NGC_KEY"',
    ],
)
def test_innocent_text_is_left_alone(text):
    assert redact(text, environ={}) == text


def test_names_holding_key_or_token_as_a_word_are_credentials():
    for name in ("WANDB_API_KEY", "NGC_KEY", "apiKey", "HF_TOKEN", "access-token", "PGPASSWORD",
                 "client_secret", "GOOGLE_APPLICATION_CREDENTIALS", "AccountKey"):  # fmt: skip
        assert secret_name(name), name
    for name in ("TOKENIZERS_PARALLELISM", "tokens_per_s", "keyword", "monkey", "NCCL_ALGO"):
        assert not secret_name(name), name


def test_a_results_tree_is_masked_by_value_and_by_key():
    tree = {"env": {"NGC_KEY": SECRET, "NCCL_DEBUG": "INFO"}, "log": [f"HF_TOKEN={SECRET}"]}
    assert mask_tree(tree, environ={}) == {
        "env": {"NGC_KEY": MASK, "NCCL_DEBUG": "INFO"},
        "log": [f"HF_TOKEN={MASK}"],
    }


secret_values = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_/+=.-]{7,40}", fullmatch=True)
names = st.sampled_from(["WANDB_API_KEY", "HF_TOKEN", "NGC_KEY", "password", "apiKey",
                         "client_secret", "DB_PASSWD", "aws_secret_access_key"])  # fmt: skip
forms = st.sampled_from(["{n}={v}", "export {n}={v}", "--{n}={v}", "--{n} {v}", '"{n}": "{v}"',
                         "'{n}': '{v}'", "{n}: {v}", '{n}: "{v}"', "{n}='{v}'"])  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(names, forms, secret_values, st.text(max_size=40), st.text(max_size=40))
def test_fuzz_a_named_secret_never_survives(name, form, value, before, after):
    text = f"{before}\n{form.format(n=name, v=value)}\n{after}"
    assert value not in redact(text, environ={})


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_masking_is_idempotent_and_never_raises(text):
    once = redact(text, environ={})
    assert redact(once, environ={}) == once


TERMINAL_ACTS = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]
TERMINAL_ACTS += ["\u2028", "\u2029", "\u202e", "\u2066"]


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_the_terminal_rule_leaves_nothing_a_terminal_acts_on(text):
    shown = for_terminal(text)
    assert not any(ch in shown for ch in TERMINAL_ACTS)
    line = one_line(text)
    assert "\n" not in line and "\t" not in line
    assert not any(ch in line for ch in TERMINAL_ACTS)
    if all(ch.isprintable() or ch in "\n\t" for ch in text):
        assert printable(text) == text  # nothing printable is changed


# capsys is read (and so emptied) once per example
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(min_size=1, max_size=60))
def test_fuzz_cli_errors_echo_no_raw_escape(capsys, text):
    """`perfgate report TEXT` names TEXT in its one-line error (or argparse's usage error)."""
    from perfgate import cli

    try:
        code = cli.main(["report", text])
    except SystemExit as e:  # argparse's own usage error (an option-like text)
        code = e.code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert not any(ch in err.removesuffix("\n") for ch in TERMINAL_ACTS if ch != "\n")
    if err.startswith("perfgate report: error: "):
        assert err.count("\n") == 1
