"""Command-line options generated from a mechanism's parameters.

A registered mechanism's parameters are its attrs fields
(``Registry.mechanism(name).parameters()``); each is offered as ``--NAME VALUE``
(also ``--NA-ME`` for ``NA_ME``), typed by ``accounting.workload.parameter_kind``:
numbers in the strict syntax of ``accounting.cli.base``, booleans, the neighbouring
relation, vectors (``--means 0 1``) and nested mechanisms as TOML inline tables
(``--base '{name = "laplace", b = 1}'``). A parameter named like one of the
command's own options is offered as ``--param-NAME``.
"""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from accounting.cli.base import CLIError, Parser, RawHelpFormatter, parse_float, parse_int
from accounting.registry.registry import Registry, did_you_mean
from accounting.validation import check_depth
from accounting.workload import Use, make_use, parameter_kind

if TYPE_CHECKING:
    from accounting.pairs.mechanism import Mechanism

__all__: list[str] = []

#: options of the commands themselves: a mechanism parameter of one of these names is
#: offered as ``--param-NAME`` instead of ``--NAME``
_RESERVED = frozenset({"h", "help", "workload", "compose", "delta", "epsilon", "accountant",
                       "step", "json", "version"})


def option_spellings(param: str) -> list[str]:
    """Command-line spellings of a parameter: ``NAME`` (and ``NA-ME`` for ``NA_ME``),
    or ``param-NAME`` where ``NAME`` is one of the command's own options."""
    base = f"param-{param}" if param in _RESERVED else param
    names = [base]
    if "_" in base:
        names.append(base.replace("_", "-"))
    return names


def _parse_bool(text: str) -> bool:
    low = str(text).lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


_parse_bool.__name__ = "boolean"  # argparse names the type in its message


def _parse_table(text: str) -> dict[str, Any]:
    """A TOML inline table, e.g. ``{name = "gaussian", sigma = 1.0}`` (a mechanism).
    Refusals are ``ArgumentTypeError``s, whose message argparse shows (of a plain
    ValueError it shows only the text given, which may be long)."""
    try:
        check_depth(text, "the inline table")
        value = tomllib.loads(f"v = {text}")["v"]
        check_depth(value, "the inline table")
    except tomllib.TOMLDecodeError:
        raise argparse.ArgumentTypeError(f"not a TOML inline table: {text!r:.80}") from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a TOML inline table: {text!r:.80}")
    return value


_parse_table.__name__ = "inline table"


def _default_text(value: Any) -> str:
    if isinstance(value, attrs.Factory):  # type: ignore[arg-type]
        return "(computed)"
    if hasattr(value, "value") and not isinstance(value, (int, float)):
        return str(value.value)
    return repr(value) if isinstance(value, str) else f"{value}"


def parameters_in_order(cls: type[Mechanism]) -> list[attrs.Attribute[Any]]:
    """A mechanism's own parameters first, then the shared keyword-only ones."""
    return sorted(cls.parameters().values(), key=lambda a: a.kw_only)


def param_parser(prog: str, cls: type[Mechanism], *,
                 add_options: Callable[[argparse.ArgumentParser], None] | None = None
                  ) -> Parser:
    """A parser of ``--NAME VALUE`` for each parameter of mechanism class ``cls``.

    ``add_options`` adds the command's own options too (for ``--help``)."""
    p = Parser(prog=prog, add_help=False, description=(cls.__doc__ or "").strip() or None,
                formatter_class=RawHelpFormatter)
    if add_options is not None:
        add_options(p)
    group = p.add_argument_group(f"parameters of {cls.name}")
    for attr in parameters_in_order(cls):
        kind = parameter_kind(attr)
        required = attr.default is attrs.NOTHING
        default = "required" if required else f"default {_default_text(attr.default)}"
        names = [f"--{n}" for n in option_spellings(attr.name)]
        kw: dict[str, Any] = {"dest": f"param_{attr.name}", "metavar": kind.upper(),
                              "default": None, "help": default}
        if kind == "int":
            kw["type"] = parse_int
        elif kind == "float":
            kw["type"] = parse_float
        elif kind == "bool":
            kw["type"] = _parse_bool
        elif kind == "neighbouring":
            kw["metavar"] = "{add_remove,replace_one}"
        elif kind == "vector":
            kw.update(type=parse_float, nargs="+", metavar="X")
        elif kind == "mechanism":
            kw.update(type=_parse_table, metavar="'{name=\"…\", …}'")
        group.add_argument(*names, **kw)
    return p


def parse_params(prog: str, cls: type[Mechanism], extras: list[str], rest_hint: Callable[[], str],
                 *, solve: str | None = None, options: Sequence[str] = ()) -> dict[str, Any]:
    """The ``--PARAM VALUE`` options of mechanism class ``cls`` in ``extras``; an
    unknown option or a stray argument is refused (``rest_hint()`` says where to look),
    and so is a missing required parameter other than ``solve``.

    ``options`` are the command's own options: an unknown option close to one of them
    is reported as a mistyped option (``unknown option '--delat' (did you mean
    '--delta'?)``); only one close to none of them is blamed on the mechanism."""
    name = cls.name
    pns, rest = param_parser(f"{prog} {name}", cls).parse_known_args(extras)
    if rest:
        bad = next((r for r in rest if r.startswith("-")), rest[0])
        if not bad.startswith("-"):
            raise CLIError(f"{name}: unexpected argument {bad!r} ({rest_hint()})")
        flag = bad.partition("=")[0]
        own = [f"--{n}" for a in parameters_in_order(cls) for n in option_spellings(a.name)]
        if did_you_mean(flag, options, prefix="--"):
            raise CLIError(f"unknown option {flag!r}"
                           f"{did_you_mean(flag, [*options, *own], prefix='--')} "
                           f"(see '{prog} --help')")
        raise CLIError(f"{name}: unknown parameter {flag!r}"
                       f"{did_you_mean(flag, own, prefix='--')} ({rest_hint()})")
    params = {k[len("param_"):]: v for k, v in vars(pns).items() if v is not None}
    if solve is not None and solve in params:
        raise CLIError(f"{name}: --{option_spellings(solve)[0]} is the parameter being solved "
                       f"for; do not give it")
    missing = [a.name for a in cls.parameters().values()
               if a.default is attrs.NOTHING and a.name not in params and a.name != solve]
    if missing:
        raise CLIError(f"{name}: missing parameter "
                       + ", ".join(f"--{option_spellings(m)[0]}" for m in missing))
    return params


def mechanism_use(prog: str, name: str, extras: list[str], registry: Registry,
                  count: int, *, options: Sequence[str] = ()) -> Use:
    """The mechanism ``name`` from its ``--PARAM VALUE`` options in ``extras``, as a
    workload ``Use`` run ``count`` times (``options``: the command's own, for
    ``parse_params``)."""
    cls = registry.mechanism(name)

    def hint() -> str:
        return "its parameters: " + ", ".join(f"--{option_spellings(a.name)[0]}"
                                              for a in parameters_in_order(cls))
    return make_use(registry, name, parse_params(prog, cls, extras, hint, options=options),
                    count)


def mechanism_help(prog: str, mechanism: str | None, registry: Registry,
                   description: str, add_options: Callable[[argparse.ArgumentParser], None]
                    ) -> int:
    """``--help`` of a subcommand taking MECHANISM: its options, and with a MECHANISM
    that mechanism's parameters first."""
    cls = registry.mechanism(mechanism) if mechanism else None
    p = Parser(prog=prog if cls is None else f"{prog} {mechanism}", add_help=False,
                description=description if cls is None else None)
    add_options(p)
    if cls is not None:
        param_parser(f"{prog} {mechanism}", cls).print_help()
        print()
    p.print_help()
    return 0


def mechanism_names(registry: Registry) -> str:
    """The registered mechanism names, sorted, comma-separated (for help and errors)."""
    return ", ".join(sorted(registry.mechanisms))
