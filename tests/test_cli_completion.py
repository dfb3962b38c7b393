"""``accounting completion bash|zsh``: the script is generated from the parser and the
registry, and bash completes with it (run for real in a bash subprocess)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import accounting
from accounting.cli.app import build_parser, main
from accounting.cli.completion import completion_script

BASH = shutil.which("bash")


def script(capsys, shell="bash") -> str:
    assert main(["completion", shell]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def complete(text: str, words: list[str]) -> list[str]:
    """COMPREPLY of the generated function for the command line ``words`` (the last
    one being completed)."""
    driver = (text + "\nCOMP_WORDS=(" + " ".join(f"'{w}'" for w in words) + ")\n"
              f"COMP_CWORD={len(words) - 1}\n_accounting\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    proc = subprocess.run([BASH, "--norc", "--noprofile", "-c", driver], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


def test_the_script_follows_the_parser_and_the_registry(capsys):
    text = script(capsys)
    assert text.rstrip().endswith("complete -o default -F _accounting accounting")
    commands = next(a for a in build_parser()._actions if hasattr(a, "choices")
                    and isinstance(a.choices, dict)).choices
    for name in commands:
        assert f"        {name})" in text, name
    for name in accounting.default_registry().mechanisms:
        assert f"        {name}) echo" in text, name
    zsh = script(capsys, "zsh")
    assert "bashcompinit" in zsh and zsh.endswith(text.split("\n", 1)[1])
    with pytest.raises(ValueError, match="shell must be one of bash, zsh"):
        completion_script(build_parser(), accounting.default_registry(), "fish")


def test_an_unknown_shell_is_a_usage_error(capsys):
    assert main(["completion", "fish"]) == 2
    assert "invalid choice: 'fish'" in capsys.readouterr().err


@pytest.mark.skipif(BASH is None, reason="bash not installed")
def test_bash_completes_commands_mechanisms_parameters_and_choices(capsys):
    text = script(capsys)
    assert complete(text, ["accounting", "ep"]) == ["epsilon"]
    assert complete(text, ["accounting", "epsilon", "gau"]) == ["gaussian", "gaussian_mixture"]
    # a value before the mechanism is not taken for it; the mechanism's options follow it
    assert complete(text, ["accounting", "epsilon", "--delta", "1e-5", "gaussian", "--si"]) \
        == ["--sigma"]
    assert complete(text, ["accounting", "delta", "laplace", "--"]).count("--b") == 1
    assert complete(text, ["accounting", "epsilon", "--accountant", ""]) == \
        ["all", "pld", "rdp", "zcdp"]
    assert complete(text, ["accounting", "calibrate", "--direction", "f"]) == ["forward"]
    assert complete(text, ["accounting", "epsilon", "--delta", ""]) == []   # a number
    assert "zsh" in complete(text, ["accounting", "completion", ""])

