"""A path-valued option written with a space and pointing outside the suite: pytest roots itself
elsewhere before perfgate loads; the entry-point guard turns that into a one-line fix."""

from __future__ import annotations

pytest_plugins = ["pytester"]


def test_absolute_path_option_gets_a_one_line_fix(suite, tmp_path_factory):
    suite.shipped_rows()
    image = tmp_path_factory.mktemp("images") / "nemo.sqsh"
    image.write_bytes(b"")
    result = suite.pytester.runpytest_subprocess(
        "--dry-run", "-m", "h100", "--gpus", "64", "--container-image", str(image)
    )
    assert result.ret == 4  # a usage error, not a crash or "unrecognized arguments"
    err = "\n".join(result.errlines)
    assert f"write the option with '=', e.g. --container-image={image}" in err
    assert "unrecognized arguments" not in err


def test_the_equals_form_works_and_the_guard_stays_silent(suite, tmp_path_factory):
    suite.shipped_rows()
    image = tmp_path_factory.mktemp("images") / "nemo.sqsh"
    image.write_bytes(b"")
    result = suite.pytester.runpytest_subprocess(
        "--dry-run", "-m", "h100 and nemo2", "--gpus", "64", f"--container-image={image}"
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=4)
