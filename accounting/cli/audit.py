"""``accounting audit``: test an (ε, δ) claim with a registered auditor, from .npy
samples or from the user's own callable (see ``accounting.cli.app`` and docs/cli.md).

Everything the user supplies is checked before any work starts: .npy files from
their header (nothing is unpickled, nothing cast), the memory the Gram matrices
need, the claim's range; the user's module is imported with ``sys.path`` restored
afterwards, and whatever their code raises is reported as theirs.
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
from typing import Any

import numpy as np

from accounting.cli.base import (
    EXIT_REJECTED,
    CLIError,
    UserCodeError,
    count_text,
    one_line,
    parse_float,
    parse_int,
    stdout_to_stderr,
    unknown_name_error,
)
from accounting.cli.output import print_json
from accounting.registry.auditor import offered_methods, primary_methods
from accounting.registry.registry import Registry
from accounting.validation import check_positive, check_real
from accounting.vocabulary import AnyArray

__all__: list[str] = []


_AUDIT_DESCRIPTION = (
    "Audit the claim that a mechanism is (ε, δ)-DP from samples of its outputs on two "
    "neighbouring datasets: --x/--y .npy files of shape (n, d), or a Python callable "
    "MODULE:FUNCTION (dataset, rng) -> output vector run --n times on --d0 and --d1 (each "
    "a .npy file or MODULE:ATTRIBUTE). The auditor is looked up in the registry "
    "(--auditor NAME; needed only when more than one is registered) and called through the interface documented in "
    "accounting.registry.hookspecs.accounting_register_auditors. MODULE is imported with the "
    "current directory searched first (as by python -m) during the import only; importing "
    "it runs its code. Whatever your module or callable raises (SystemExit included) is "
    "reported as one line naming it as yours, with exit status 2. Stages that need dense "
    "n × n matrices (the kernel statistics, --sweep) are refused before they start when "
    "they would exceed --max-memory; the witness tests need memory linear in n. "
    "A one-run canary audit reads --scores FILE and --inclusion FILE (per canary a score "
    "and its 0/1 inclusion bit, .npy or text with one number a line) and certifies an ε "
    "lower bound; --epsilon is then the optional claim to test, --delta the δ of the "
    "bound (default: the auditor's). Without --auditor the auditor is the one registered "
    "auditor offering that kind of audit (scores, samples or a callable). With --sequential "
    "the audit is anytime-valid and sequential (an auditor offering audit_sequential): "
    "outputs of --mechanism are drawn in rounds, or the rows of --x/--y read in order, "
    "and it stops as soon as the claim is refuted at --level (valid under optional "
    "stopping), when its witnesses cannot show a violation, or after --max-n pairs; "
    "the report gives the pairs used.")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("audit", help="audit an (ε, δ) claim from samples of a black-box "
                       "mechanism", description=_AUDIT_DESCRIPTION)
    p.set_defaults(handler=run, takes_extras=False)
    p.add_argument("--auditor", default=None, metavar="NAME",
                   help="a registered auditor (default: the only one registered; required "
                        "when there are several)")
    p.add_argument("--x", metavar="FILE.npy", help="outputs on D, shape (n, d)")
    p.add_argument("--y", metavar="FILE.npy", help="outputs on D', shape (n, d)")
    p.add_argument("--mechanism", metavar="MODULE:FUNCTION",
                   help="a callable (dataset, rng) -> output vector")
    p.add_argument("--d0", metavar="SPEC", help="dataset D: FILE.npy or MODULE:ATTRIBUTE")
    p.add_argument("--d1", metavar="SPEC", help="dataset D': FILE.npy or MODULE:ATTRIBUTE")
    p.add_argument("--n", type=count_text, metavar="N", help="outputs drawn on each dataset")
    p.add_argument("--scores", metavar="FILE", help="one-run audit: per-canary scores "
                   "(.npy or text, one a line)")
    p.add_argument("--inclusion", metavar="FILE", help="one-run audit: per-canary 0/1 "
                   "inclusion bits (.npy or text, one a line)")
    p.add_argument("--abstain", type=parse_int, metavar="K", help="one-run audit: canaries "
                   "not guessed, fixed in advance (default: the best of a grid, paid for)")
    p.add_argument("--analysis", metavar="NAME", help="one-run audit: fdp or eps-delta "
                   "(default: the auditor's)")
    p.add_argument("--epsilon", type=parse_float, metavar="E",
                   help="claimed ε (required for sample and callable audits)")
    p.add_argument("--delta", type=parse_float, metavar="D",
                   help="claimed δ (required for sample and callable audits)")
    p.add_argument("--alpha", type=parse_float, nargs="+", metavar="A", help="Rényi orders (default: the auditor's)")
    p.add_argument("--level", type=parse_float, metavar="L", help="level of the test (default: the auditor's)")
    p.add_argument("--bandwidth", type=parse_float, metavar="H", help="kernel bandwidth (default: the auditor's)")
    p.add_argument("--seed", type=parse_int, metavar="S",
                   help="seed (printed in the report; default: the auditor's)")
    p.add_argument("--reference", metavar="MECHANISM",
                   help="a registered mechanism to bootstrap against (with --shift)")
    p.add_argument("--reference-param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of --reference (repeatable)")
    p.add_argument("--shift", type=parse_float, nargs="+", metavar="V",
                   help="f(D) - f(D'), d numbers, for --reference")
    p.add_argument("--n-boot", type=count_text, metavar="B", help="bootstrap replicates (default: the auditor's)")
    p.add_argument("--max-memory", type=parse_float, default=None, metavar="GB",
                   help="refuse stages whose dense n × n matrices would need more than GB "
                        "gigabytes (default: the auditor's own budget)")
    p.add_argument("--sweep", action="store_true",
                   help="also compute the descriptive D̂ and λ sweep on all samples (n × n)")
    p.add_argument("--sequential", action="store_true",
                   help="anytime-valid sequential audit: sample in rounds, stop as soon as "
                        "the claim is refuted (with --mechanism, or --x/--y read in order)")
    p.add_argument("--max-n", type=count_text, metavar="N", help="--sequential: at most N "
                   "outputs on each dataset (default: the auditor's; with --x/--y all rows)")
    p.add_argument("--progress", action="store_true", help="show progress on stderr")
    p.add_argument("--fail-on-reject", action="store_true",
                   help=f"exit with status {EXIT_REJECTED} when the claim is rejected (for CI)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _import_object(spec: str, what: str) -> Any:
    """``MODULE:NAME`` imported, with the current directory searched first (as by
    ``python -m``) only during the import: ``sys.path`` is restored afterwards. The
    import runs the user's code: any exception it raises (SystemExit included) is
    reported as theirs (``UserCodeError``)."""
    import importlib
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CLIError(f"{what}: expected MODULE:NAME, got {spec!r}")
    saved = list(sys.path)
    sys.path.insert(0, os.getcwd())
    try:
        with stdout_to_stderr():
            module = importlib.import_module(module_name)
    except ImportError as exc:
        if getattr(exc, "name", None) == module_name:
            raise CLIError(f"{what}: cannot import module {module_name!r} ({exc})") from None
        raise UserCodeError(f"{what}: importing {module_name!r} raised "
                            f"{type(exc).__name__}: {one_line(exc)}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the user's module failed at import: theirs
        raise UserCodeError(f"{what}: importing {module_name!r} raised "
                            f"{type(exc).__name__}: {one_line(exc)}") from None
    finally:
        sys.path[:] = saved
    try:
        return getattr(module, attr)
    except AttributeError:
        raise CLIError(f"{what}: module {module_name!r} has no attribute {attr!r}") from None


def _user_callable(fn: Any, spec: str) -> Any:
    """``fn`` wrapped so that whatever it raises — SystemExit and other BaseExceptions
    included, Ctrl-C aside — is reported as the user's, and what it prints goes to
    stderr (stdout carries the report)."""
    if not callable(fn):
        raise CLIError(f"--mechanism: {spec} is not callable (got {type(fn).__name__})")

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            with stdout_to_stderr():
                return fn(*args, **kwargs)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise UserCodeError(f"your mechanism {spec} raised {type(exc).__name__}: "
                                f"{one_line(exc)}") from None
    return call


#: the largest .npy file element count read by ``audit`` before the memory estimate
#: (a header may claim anything)
_NPY_MAX_ELEMENTS = 1 << 31


def _npy_header(path: str, what: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """Shape and dtype from a .npy header, read without loading the data; the file
    must be a regular file holding as many bytes as the header claims."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise CLIError(f"{what}: {path!r} is not a regular file")
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version in ((2, 0), (3, 0)):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            offset = fh.tell()
    except CLIError:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise CLIError(f"{what}: cannot read {path!r} as a .npy array "
                       f"({one_line(exc)})") from None
    if dtype.hasobject:
        raise CLIError(f"{what}: {path!r} holds Python objects; only numeric arrays are "
                       f"read (nothing is unpickled)")
    size = math.prod(shape)
    if size > _NPY_MAX_ELEMENTS:
        raise CLIError(f"{what}: {path!r} claims {size:.3g} elements (shape {shape}); at most "
                       f"{_NPY_MAX_ELEMENTS:.3g} are read")
    if info.st_size - offset < size * dtype.itemsize:
        raise CLIError(f"{what}: {path!r} is truncated: its header claims shape {shape} "
                       f"({size * dtype.itemsize} bytes) but it holds "
                       f"{info.st_size - offset}")
    return shape, dtype


def _load_npy(path: str, what: str, *, samples: bool = False) -> np.ndarray:
    """A .npy array, its header checked before loading. With ``samples``: real
    numbers only (a complex, boolean, string or structured array is refused, never
    cast), shape (n, d) or (n,), n ≥ 2, every value finite."""
    shape, dtype = _npy_header(path, what)
    if samples:
        if dtype.kind not in "fiu":
            kind = {"c": "complex", "b": "boolean", "U": "string", "S": "bytes",
                    "V": "structured", "M": "datetime", "m": "timedelta"}.get(dtype.kind,
                                                                             str(dtype))
            raise CLIError(f"{what}: {path!r} holds {kind} values ({dtype}); samples must be "
                           f"real numbers")
        if len(shape) not in (1, 2):
            raise CLIError(f"{what}: {path!r} has shape {shape}; samples must have shape "
                           f"(n, d) or (n,)")
        if math.prod(shape) == 0:
            raise CLIError(f"{what}: {path!r} is empty (shape {shape})")
        if shape[0] < 2:
            raise CLIError(f"{what}: {path!r} holds n = {shape[0]} sample; at least 2 "
                           f"are needed")
    try:
        arr: AnyArray = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise CLIError(f"{what}: cannot read {path!r} as a .npy array "
                       f"({one_line(exc)})") from None
    if samples:
        bad = ~np.isfinite(arr)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise CLIError(f"{what}: {path!r} holds a non-finite value "
                           f"({arr[where]} at index {where}); samples must be finite")
    return arr


#: the smallest λ₀ = δe^{−ε} the auditor's tests can use: a normal float64
_LOG_MIN_LAMBDA = math.log(np.finfo(float).tiny)


def _check_audit_claim(epsilon: float, delta: float) -> None:
    """ε ≥ 0 finite, δ ∈ (0, 1), and λ₀ = δe^{−ε} a normal float (log δ − ε ≥ −708)."""
    epsilon = check_real("epsilon", epsilon, lo=0.0)
    delta = check_real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if math.log(delta) - epsilon < _LOG_MIN_LAMBDA:
        top = math.log(delta) - _LOG_MIN_LAMBDA
        raise CLIError(f"epsilon must be at most {top:.4g} at delta = {delta:g}: the audit "
                       f"tests the claim at λ₀ = δ·e^(−ε), which underflows beyond; got "
                       f"{epsilon:g}")


def _auditor(name: str | None, registry: Registry, method: str | None = None) -> Any:
    """The auditor named ``name``; without a name the one registered auditor offering
    ``method`` (``offered_methods``; among several, the one that names it among its
    ``primary_methods``). The registry's auditors are chosen by what they offer, never
    by a plugin's name."""
    if name is not None:
        if name not in registry.auditors:
            raise unknown_name_error("auditor", name, registry.auditors)
        chosen = registry.auditors[name]
        if method is not None and method not in offered_methods(chosen):
            raise CLIError(f"auditor {name!r} offers no {method} (it offers "
                           f"{', '.join(offered_methods(chosen)) or 'nothing'})")
        return chosen
    if not registry.auditors:
        raise CLIError("no auditor is registered: install a plugin that provides one "
                       "(see 'accounting mechanisms')")
    able = {n: a for n, a in registry.auditors.items()
            if method is None or method in offered_methods(a)}
    if method is not None and len(able) > 1:
        primary = {n: a for n, a in able.items() if method in primary_methods(a)}
        able = primary if len(primary) == 1 else able
    if len(able) == 1:
        return next(iter(able.values()))
    if not able:
        raise CLIError(f"no registered auditor offers {method} (registered: "
                       f"{', '.join(sorted(registry.auditors))})")
    raise CLIError(f"several auditors are registered ({', '.join(sorted(able))})"
                   f": choose one with --auditor NAME")


def _load_vector(path: str, what: str) -> np.ndarray:
    """A vector from a .npy file (header checked, nothing unpickled) or a text file of
    numbers, one a line or separated by blanks/commas (read as text, never executed)."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise CLIError(f"{what}: cannot read {path!r} ({one_line(exc)})") from None
    if magic == b"\x93NUMPY":
        return np.asarray(_load_npy(path, what))
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"{what}: cannot read {path!r} as text ({one_line(exc)})") from None
    tokens = text.replace(",", " ").split()
    try:
        return np.array([float(t) for t in tokens], dtype=np.float64)
    except ValueError as exc:
        raise CLIError(f"{what}: {path!r} holds something that is not a number "
                       f"({one_line(exc)})") from None


def _run_scores(ns: argparse.Namespace, registry: Registry) -> int:
    """``accounting audit --scores FILE --inclusion FILE``: the one-run canary audit."""
    if ns.scores is None or ns.inclusion is None:
        raise CLIError("--scores and --inclusion go together")
    others = [o for o, v in (("--x", ns.x), ("--y", ns.y), ("--mechanism", ns.mechanism),
                             ("--reference", ns.reference), ("--shift", ns.shift))
              if v is not None]
    if others:
        raise CLIError(f"--scores/--inclusion cannot be combined with {', '.join(others)}")
    auditor = _auditor(ns.auditor, registry, "audit_scores")
    scores = _load_vector(ns.scores, "--scores")
    inclusion = _load_vector(ns.inclusion, "--inclusion")
    options = {k: v for k, v in (("abstain", ns.abstain), ("epsilon", ns.epsilon),
                                 ("delta", ns.delta), ("level", ns.level),
                                 ("analysis", ns.analysis), ("seed", ns.seed))
               if v is not None}
    report = auditor.audit_scores(scores, inclusion, **options)
    if ns.json:
        print_json("audit", report.to_dict())
    else:
        print(report)
    return EXIT_REJECTED if ns.fail_on_reject and report.rejected else 0


def _run_sequential(ns: argparse.Namespace, registry: Registry) -> int:
    """``accounting audit --sequential``: the anytime-valid sequential audit."""
    bad = [o for o, v in (("--n", ns.n), ("--reference", ns.reference),
                          ("--shift", ns.shift), ("--n-boot", ns.n_boot),
                          ("--alpha", ns.alpha), ("--bandwidth", ns.bandwidth),
                          ("--max-memory", ns.max_memory)) if v is not None]
    bad += ["--sweep"] if ns.sweep else []
    if bad:
        raise CLIError(f"--sequential cannot be combined with {', '.join(bad)} (use "
                       f"--max-n N for the sampling budget)")
    if ns.epsilon is None or ns.delta is None:
        raise CLIError("--epsilon E and --delta D are required for a sequential audit")
    _check_audit_claim(ns.epsilon, ns.delta)
    by_samples, by_callable = ns.x is not None or ns.y is not None, ns.mechanism is not None
    if by_samples == by_callable:
        raise CLIError("--sequential: give either --x FILE --y FILE or --mechanism "
                       "MODULE:FUNCTION --d0 SPEC --d1 SPEC")
    auditor = _auditor(ns.auditor, registry, "audit_sequential")
    options: dict[str, Any] = {k: v for k, v in (("level", ns.level), ("max_n", ns.max_n),
                                                 ("seed", ns.seed)) if v is not None}
    if by_samples:
        if ns.x is None or ns.y is None:
            raise CLIError("--x and --y go together")
        x, y = _load_npy(ns.x, "--x", samples=True), _load_npy(ns.y, "--y", samples=True)
        if (1 if x.ndim == 1 else x.shape[1]) != (1 if y.ndim == 1 else y.shape[1]):
            raise CLIError(f"--x and --y must have the same dimension d, got shapes "
                           f"{x.shape} and {y.shape}")
        report = auditor.audit_sequential(samples=(x, y), epsilon=ns.epsilon,
                                          delta=ns.delta, **options)
    else:
        if ns.d0 is None or ns.d1 is None:
            raise CLIError("--mechanism needs --d0 SPEC and --d1 SPEC")
        fn = _user_callable(_import_object(ns.mechanism, "--mechanism"), ns.mechanism)
        data = [_import_object(s, f"--d{i}") if ":" in s and not os.path.exists(s)
                else _load_npy(s, f"--d{i}") for i, s in enumerate((ns.d0, ns.d1))]
        report = auditor.audit_sequential(fn, data[0], data[1], epsilon=ns.epsilon,
                                          delta=ns.delta, **options)
    if ns.json:
        print_json("audit", report.to_dict())
    else:
        print(report)
    return EXIT_REJECTED if ns.fail_on_reject and report.rejected else 0


def run(ns: argparse.Namespace, extras: list[str], registry: Registry) -> int:
    if ns.sequential and (ns.scores is not None or ns.inclusion is not None):
        raise CLIError("--sequential audits sampled outputs; a one-run audit (--scores, "
                       "--inclusion) has no rounds")
    if ns.scores is not None or ns.inclusion is not None:
        return _run_scores(ns, registry)
    if ns.max_n is not None and not ns.sequential:
        raise CLIError("--max-n belongs to a sequential audit (--sequential)")
    one_run = [o for o, v in (("--abstain", ns.abstain), ("--analysis", ns.analysis)) if v is not None]
    if one_run:
        raise CLIError(f"{', '.join(one_run)} belong to a one-run audit (--scores FILE "
                       f"--inclusion FILE)")
    if ns.sequential:
        return _run_sequential(ns, registry)
    if ns.epsilon is None or ns.delta is None:
        raise CLIError("--epsilon E and --delta D are required for an audit from samples "
                       "or a callable")
    by_callable = ns.mechanism is not None
    auditor = _auditor(ns.auditor, registry,
                       "audit_callable" if by_callable else "audit_samples")
    settings: dict[str, Any] = {k: v for k, v in (
        ("alphas", ns.alpha and tuple(ns.alpha)), ("level", ns.level),
        ("bandwidth", ns.bandwidth), ("shift", ns.shift), ("n_boot", ns.n_boot))
        if v is not None}
    if ns.progress:
        settings["progress"] = True
    if ns.reference:
        params = {}
        for item in ns.reference_param:
            key, sep, value = item.partition("=")
            if not sep:
                raise CLIError(f"--reference-param: expected KEY=VALUE, got {item!r}")
            try:
                params[key] = parse_float(value)
            except argparse.ArgumentTypeError:
                params[key] = value
        settings["reference"] = registry.mechanism(ns.reference)(**params)
    elif ns.reference_param:
        raise CLIError("--reference-param needs --reference")
    by_samples = ns.x is not None or ns.y is not None
    if by_samples == by_callable:
        raise CLIError("give either --x FILE --y FILE or --mechanism MODULE:FUNCTION "
                       "--d0 SPEC --d1 SPEC --n N")
    _check_audit_claim(ns.epsilon, ns.delta)
    if ns.max_memory is not None:
        # the auditor knows which of its stages need n × n memory and refuses up front
        settings["memory_budget"] = check_positive("max-memory", ns.max_memory) * 1e9
    if ns.sweep:
        settings["sweep"] = True
    if by_samples:
        if ns.x is None or ns.y is None:
            raise CLIError("--x and --y go together")
        x, y = _load_npy(ns.x, "--x", samples=True), _load_npy(ns.y, "--y", samples=True)
        dx = 1 if x.ndim == 1 else x.shape[1]
        dy = 1 if y.ndim == 1 else y.shape[1]
        if dx != dy:
            raise CLIError(f"--x and --y must have the same dimension d, got shapes "
                           f"{x.shape} and {y.shape}")
        report = auditor.audit_samples(x, y, epsilon=ns.epsilon, delta=ns.delta,
                                       seed=ns.seed, **settings)
    else:
        if ns.d0 is None or ns.d1 is None or ns.n is None:
            raise CLIError("--mechanism needs --d0 SPEC, --d1 SPEC and --n N")
        fn = _user_callable(_import_object(ns.mechanism, "--mechanism"), ns.mechanism)
        data = [_import_object(s, f"--d{i}") if ":" in s and not os.path.exists(s)
                else _load_npy(s, f"--d{i}") for i, s in enumerate((ns.d0, ns.d1))]
        report = auditor.audit_callable(fn, data[0], data[1], n=ns.n, epsilon=ns.epsilon,
                                        delta=ns.delta, seed=ns.seed, **settings)
    if ns.json:
        print_json("audit", report.to_dict())
    else:
        print(report)
    return EXIT_REJECTED if ns.fail_on_reject and report.rejected else 0
