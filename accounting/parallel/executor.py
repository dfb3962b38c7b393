"""Map tasks over an executor: serially, on local processes, or on a Dask cluster.

A *task* is ``fn(config, seed)``: a plain configuration (a JSON-able dict, a few
hundred bytes) and the ``numpy.random.SeedSequence`` of its index (``seeds``). It
returns a picklable result. ``map_tasks`` runs a list of tasks on an ``Engine`` and
returns the results in the order of the configurations, whatever order they finish
in; ``on_result`` sees each one as it finishes (to stream it to a file).

Engines (``Engine``), all through ``concurrent.futures``:

* serial (default): in this process;
* ``workers=N``: a local ``ProcessPoolExecutor`` of N processes (forkserver start on
  POSIX, spawn elsewhere);
* ``scheduler="tcp://HOST:PORT"`` or ``client=`` a ``dask.distributed.Client``: a Dask
  cluster, through the client's ``concurrent.futures`` executor (Dask is imported
  only then: the optional ``distributed`` extra);
* ``executor=``: any ``concurrent.futures.Executor`` of your own.

Each task runs with its BLAS/OpenMP pools capped at ``threads`` (``threads``), in
every engine. Tasks are sent in chunks of ``chunksize`` (default: about eight
chunks per worker, so that millisecond tasks do not pay one round trip each).

Failures. An exception raised by a task is not retried — the task is a
deterministic function of (config, seed), so it would raise again — but reported
as a ``TaskError`` naming the task, its configuration and the exception (or, with
``on_error="record"``, returned as a ``TaskFailure`` in its place). ``SystemExit``
counts as such an exception, and so does ``KeyboardInterrupt`` raised by a task
off the caller's thread (in the serial engine it is the user's Ctrl-C and stops the
run); a result that cannot be sent back from a worker (not picklable) is its
task's failure too. A worker that
dies is an infrastructure failure: a local pool is rebuilt and the unfinished tasks
are run again, up to ``retries`` times (safe, since tasks are pure); Dask retries
on its own (``distributed.scheduler.allowed-failures``) and then reports the task.
What cannot be fixed is an ``EngineError`` with a one-line message: a scheduler not
reachable within ``connect_timeout``, a cluster without workers, a worker that keeps
dying, a connection lost, or no task finishing within ``timeout`` seconds.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import math
import multiprocessing
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from accounting.parallel.malloc import tune_allocator
from accounting.parallel.seeds import resolve_seed, task_seed
from accounting.parallel.threads import cap_process_threads, check_threads, limited_threads
from accounting.progress import progress as progress_bar
from accounting.validation import check_count, check_positive

__all__ = ["Engine", "TaskError", "TaskFailure", "EngineError", "map_tasks",
           "describe_config", "SCHEDULER_PATTERN"]

#: what a scheduler address must look like: PROTOCOL://HOST[:PORT]
SCHEDULER_PATTERN = re.compile(
    r"(tcp|tls|ws|wss|ucx)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:[0-9]{1,5})?\Z")
#: at most this many characters of a configuration in a message
_CONFIG_CHARS = 400
#: chunks per worker when ``chunksize`` is not given
_CHUNKS_PER_WORKER = 8


class TaskError(RuntimeError):
    """A task raised. ``index``: its position; ``config``: its configuration;
    ``error``: the exception's type name; ``reason``: its message."""

    def __init__(self, index: int, config: Any, error: str, reason: str) -> None:
        self.index, self.config, self.error, self.reason = index, config, error, reason
        super().__init__(f"task {index} failed with {error}: {reason} — configuration: "
                         f"{describe_config(config)}")


class EngineError(RuntimeError):
    """The engine, not a task, failed: unreachable scheduler, dead workers, timeout."""


@attrs.frozen
class TaskFailure:
    """A failed task kept in place of its result (``on_error="record"``)."""

    index: int
    config: Any = attrs.field(repr=False)
    error: str
    reason: str

    def describe(self) -> str:
        return f"{self.error}: {self.reason}"


def describe_config(config: Any) -> str:
    """A configuration as one line of canonical JSON, shortened past 400 characters."""
    try:
        text = json.dumps(config, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        text = repr(config)
    text = " ".join(text.split())
    return text if len(text) <= _CONFIG_CHARS else text[:_CONFIG_CHARS - 1] + "…"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _check_timeout(name: str, value: Any) -> float | None:
    return None if value is None else check_positive(name, value)


# the Engine's field converters (named functions: attrs' type checker reads their signatures)
def _check_workers(value: Any) -> int | None:
    return None if value is None else check_count("workers", value, maximum=4096)


def _check_connect_timeout(value: Any) -> float:
    return check_positive("connect_timeout", value)


def _check_task_timeout(value: Any) -> float | None:
    return _check_timeout("timeout", value)


def _check_retries(value: Any) -> int:
    return check_count("retries", value, minimum=0, maximum=100)


def _check_chunksize(value: Any) -> int | None:
    return None if value is None else check_count("chunksize", value)


def _check_scheduler(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not SCHEDULER_PATTERN.match(value):
        raise ValueError(f"scheduler must be an address PROTOCOL://HOST:PORT such as "
                         f"tcp://10.0.0.1:8786 (protocol tcp, tls, ws, wss or ucx), got "
                         f"{value!r}")
    return value


@attrs.frozen
class Engine:
    """Where tasks run; at most one of ``workers`` > 1, ``scheduler``, ``client`` and
    ``executor``; none of them means serially, here.

    ``threads``: BLAS/OpenMP threads per task (default 1); ``connect_timeout``:
    seconds to reach a scheduler and see a worker (default 10); ``timeout``: give up
    when no task has finished for that many seconds (default None: tasks may be
    long, such as one training run per sample; dead local workers and a lost
    scheduler are detected without it); ``retries``: how often a local pool is
    rebuilt after a worker died; ``chunksize``: tasks per submission.
    """

    workers: int | None = attrs.field(default=None, converter=_check_workers)
    scheduler: str | None = attrs.field(default=None, converter=_check_scheduler)
    client: Any = attrs.field(default=None, repr=False)
    executor: Any = attrs.field(default=None, repr=False)
    threads: int = attrs.field(default=1, converter=check_threads)
    connect_timeout: float = attrs.field(default=10.0, converter=_check_connect_timeout)
    timeout: float | None = attrs.field(default=None, converter=_check_task_timeout)
    retries: int = attrs.field(default=1, converter=_check_retries)
    chunksize: int | None = attrs.field(default=None, converter=_check_chunksize)

    def __attrs_post_init__(self) -> None:
        given = [name for name, value in (("workers", self.workers if
                                           (self.workers or 1) > 1 else None),
                                          ("scheduler", self.scheduler),
                                          ("client", self.client), ("executor", self.executor))
                 if value is not None]
        if len(given) > 1:
            raise ValueError(f"give at most one of workers > 1, scheduler, client and "
                             f"executor, got {' and '.join(given)}")
        if self.executor is not None and not isinstance(self.executor, cf.Executor):
            raise TypeError(f"executor must be a concurrent.futures.Executor, got "
                            f"{type(self.executor).__name__}")

    @property
    def kind(self) -> str:
        """``"serial"``, ``"processes"``, ``"dask"`` or ``"executor"``."""
        if self.scheduler is not None or self.client is not None:
            return "dask"
        if self.executor is not None:
            return "executor"
        return "processes" if (self.workers or 1) > 1 else "serial"

    def describe(self) -> str:
        kind = self.kind
        if kind == "processes":
            return f"{self.workers} local processes"
        if kind == "dask":
            return f"Dask scheduler {self.scheduler or _client_address(self.client)}"
        if kind == "executor":
            return type(self.executor).__name__
        return "serial"


def _client_address(client: Any) -> str:
    return str(getattr(getattr(client, "scheduler", None), "address", None) or "(client)")


# ------------------------------------------------------------- worker side
def _failure(exc: BaseException) -> tuple[str, str]:
    """(type name, one-line reason) of a task's exception."""
    if isinstance(exc, SystemExit):
        return "SystemExit", f"the task called sys.exit({exc.code!r})"
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt", "the task raised KeyboardInterrupt"
    return type(exc).__name__, _one_line(str(exc)) or "(no message)"


def _run_chunk(fn: Callable[..., Any], items: Sequence[tuple[Any, ...]], seed: int,
               threads: int | None, here: bool = False) -> list[Any]:
    """Run ``items`` = [(position, index, config)]; [(position, ok, value or
    (type name, message))]. Exceptions are caught here, so that the main process
    gets plain strings (an exception need not be picklable) for every task.
    ``threads`` None: the caller has capped the threads already (capping costs a few
    milliseconds, once per chunk). ``here``: the chunk runs in the caller's own thread
    (the serial engine)."""
    out = []
    if threads is not None:       # in a worker process (see ``malloc``)
        tune_allocator()
    with (limited_threads(threads) if threads is not None else contextlib.nullcontext()):
        for position, index, config in items:
            try:
                value = fn(config, task_seed(seed, index))
            except BaseException as exc:  # the task's failure, reported with its config
                # SystemExit and KeyboardInterrupt too, except a KeyboardInterrupt in the
                # caller's own thread: that is (or cannot be told from) its user's Ctrl-C.
                # In a worker a Ctrl-C also reaches the caller, which stops the run.
                if here and isinstance(exc, KeyboardInterrupt):
                    raise
                out.append((position, False, _failure(exc)))
            else:
                out.append((position, True, value))
    return out


# ------------------------------------------------------------ sessions
class _Session:
    """An open engine: ``submit`` a chunk, ``rebuild`` after a break, ``close``."""

    parallelism = 1
    rebuildable = False

    def submit(self, items: list[Any], fn: Callable[..., Any], seed: int, threads: int) -> cf.Future[Any]:
        raise NotImplementedError

    def rebuild(self) -> None:
        raise NotImplementedError

    def alive(self) -> str | None:
        """None, or why no task can make progress (e.g. every worker is gone)."""
        return None

    def close(self, abort: bool) -> None:
        pass


class _ExecutorSession(_Session):
    def __init__(self, executor: cf.Executor) -> None:
        self.executor = executor
        self.parallelism = int(getattr(executor, "_max_workers", 0) or 4)

    def submit(self, items: list[Any], fn: Callable[..., Any], seed: int,
               threads: int) -> cf.Future[Any]:
        return self.executor.submit(_run_chunk, fn, items, seed, threads)


def _mp_context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    # fork would copy the threads of a parent (a Dask client, tqdm, BLAS pools)
    # into a child that has only one: forkserver where it exists. Its server imports
    # the library once (and __main__, where a script's task functions live); each
    # worker forked from it then starts in milliseconds, not seconds
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", "accounting.parallel.executor"])
    return ctx


class _PoolSession(_ExecutorSession):
    rebuildable = True

    def __init__(self, workers: int, threads: int) -> None:
        self.workers, self.threads = workers, threads
        super().__init__(self._new())
        self.parallelism = workers

    def _new(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=_mp_context(),
                                      initializer=cap_process_threads,
                                      initargs=(self.threads,))

    def rebuild(self) -> None:
        self.close(abort=True)
        self.executor = self._new()

    def close(self, abort: bool) -> None:
        pool = self.executor
        if abort:
            # do not wait for running tasks (a hung or long task must not hang us)
            processes = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in processes:
                with contextlib.suppress(Exception):
                    proc.terminate()
            for proc in processes:
                with contextlib.suppress(Exception):
                    proc.join(timeout=5)
        else:
            pool.shutdown(wait=True)


class _DaskSession(_ExecutorSession):
    def __init__(self, client: Any, owned: bool, timeout: float) -> None:
        self.client, self.owned, self.timeout = client, owned, timeout
        super().__init__(client.get_executor(pure=False))
        self.parallelism = max(1, self._n_threads())
        self._no_workers_since: float | None = None

    def _n_threads(self) -> int:
        try:
            return int(sum(self.client.nthreads().values()))
        except Exception:  # the connection is gone: reported by alive()
            return 0

    def alive(self) -> str | None:
        status = getattr(self.client, "status", "running")
        if status not in ("running", "connecting"):
            return (f"lost the connection to the Dask scheduler "
                    f"{_client_address(self.client)} (client {status})")
        if self._n_threads() > 0:
            self._no_workers_since = None
            return None
        now = time.monotonic()
        if self._no_workers_since is None:
            self._no_workers_since = now
        elif now - self._no_workers_since > self.timeout:
            return (f"the Dask cluster at {_client_address(self.client)} has had no "
                    f"workers for {self.timeout:g} s")
        return None

    def close(self, abort: bool) -> None:
        with contextlib.suppress(Exception):
            self.executor.shutdown(wait=False)
        if self.owned:
            with contextlib.suppress(Exception):
                self.client.close(timeout=self.timeout)


def _connect(address: str, timeout: float) -> Any:
    try:
        from dask.distributed import Client
    except ImportError:
        raise EngineError(f"the Dask scheduler {address} needs Dask: pip install "
                          f"'accounting-dp[distributed]'") from None
    try:
        client = Client(address, timeout=timeout,  # type: ignore[no-untyped-call, unused-ignore]  # dask's
                        set_as_default=False)                 # Client is unannotated
    except (OSError, TimeoutError) as exc:
        raise EngineError(f"cannot reach the Dask scheduler at {address} within "
                          f"{timeout:g} s ({type(exc).__name__}: {_one_line(exc)})") from None
    return client


def _wait_for_workers(client: Any, timeout: float) -> None:
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise EngineError(f"the Dask scheduler at {_client_address(client)} has no workers "
                          f"(none joined within {timeout:g} s: {_one_line(exc)})") from None


@contextlib.contextmanager
def _open(engine: Engine) -> Iterator[_Session | None]:
    kind = engine.kind
    if kind == "serial":
        yield None
        return
    if kind == "processes":
        assert engine.workers is not None   # kind 'processes' means workers > 1
        session: _Session = _PoolSession(engine.workers, engine.threads)
    elif kind == "executor":
        session = _ExecutorSession(engine.executor)
    else:
        owned = engine.client is None
        if owned:
            assert engine.scheduler is not None   # kind 'dask' without a client has one
            client = _connect(engine.scheduler, engine.connect_timeout)
        else:
            client = engine.client
        try:
            _wait_for_workers(client, engine.connect_timeout)
        except BaseException:
            if owned:
                with contextlib.suppress(Exception):
                    client.close(timeout=engine.connect_timeout)
            raise
        session = _DaskSession(client, owned, engine.connect_timeout)
    abort = True
    try:
        yield session
        abort = False
    finally:
        session.close(abort)


# -------------------------------------------------------------- the loop
def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _infrastructure(exc: BaseException) -> bool:
    """Whether ``exc`` (from a chunk's future) means a worker or the connection failed,
    as opposed to a bug in ``_run_chunk``."""
    from concurrent.futures.process import BrokenProcessPool
    name = type(exc).__name__
    return isinstance(exc, (BrokenProcessPool, OSError, EOFError)) or name in (
        "KilledWorker", "CommClosedError", "FutureCancelledError")


def _died_message(engine: Engine, exc: BaseException, chunk_items: list[Any],
                  configs: Sequence[Any], attempts: int) -> str:
    first = chunk_items[0]
    ids = ", ".join(str(i) for _, i, _ in chunk_items[:5]) + \
        (", …" if len(chunk_items) > 5 else "")
    cause = f"{type(exc).__name__}: {_one_line(exc)}" if str(exc) else type(exc).__name__
    tried = f"tried {attempts} time{'s' if attempts != 1 else ''}"
    return (f"a worker died while running task {first[1]} ({tried}; {engine.describe()}; "
            f"{cause}); unfinished task(s) {ids}; configuration of task {first[1]}: "
            f"{describe_config(configs[first[0]])}")


def map_tasks(fn: Callable[[Any, Any], Any], configs: Sequence[Any], *,
              engine: Engine | None = None, seed: int | None = None,
              indices: Sequence[int] | None = None,
              on_result: Callable[[int, Any], None] | None = None,
              on_error: str = "raise", progress: bool | None = None,
              label: str = "tasks") -> list[Any]:
    """``[fn(configs[k], task_seed(seed, indices[k])) for k]``, run on ``engine``.

    ``fn`` must be picklable (a module-level function) for a process pool or Dask.
    ``indices`` (default 0, 1, …): the task numbers that pick the seeds and name the
    tasks in messages — a resumed run passes the original ones. ``on_result(k,
    value)`` is called in this process as each task finishes. ``on_error``:
    ``"raise"`` (a ``TaskError`` at the first failure, the other tasks cancelled) or
    ``"record"`` (a ``TaskFailure`` in its place). ``progress``: True for a report
    on stderr, or a ``Progress``. ``seed`` None draws fresh entropy.
    """
    engine = Engine() if engine is None else engine
    if not isinstance(engine, Engine):
        raise TypeError(f"engine must be an Engine, got {type(engine).__name__}")
    if on_error not in ("raise", "record"):
        raise ValueError(f"on_error must be 'raise' or 'record', got {on_error!r}")
    if not callable(fn):
        raise TypeError(f"fn must be callable (config, seed) -> result, got "
                        f"{type(fn).__name__}")
    configs = list(configs)
    n = len(configs)
    indices = list(range(n)) if indices is None else [int(i) for i in indices]
    if len(indices) != n:
        raise ValueError(f"indices must have one entry per configuration ({n}), "
                         f"got {len(indices)}")
    seed = resolve_seed(seed)
    results: list[Any] = [None] * n
    bar = progress_bar(total=n, desc=label, enabled=bool(progress), delay=0.0)

    def finish(outcomes: list[Any]) -> None:
        for position, ok, value in outcomes:
            if not ok:
                failure = TaskFailure(indices[position], configs[position], *value)
                if on_error == "raise":
                    raise TaskError(failure.index, failure.config, failure.error,
                                    failure.reason)
                value = failure
            results[position] = value
            if on_result is not None:
                on_result(position, value)
            bar.update(1)

    items = [(k, indices[k], configs[k]) for k in range(n)]
    try:
        with _open(engine) as session:
            if session is None:
                with limited_threads(engine.threads):
                    for item in items:
                        finish(_run_chunk(fn, [item], seed, None, here=True))
                return results
            size = engine.chunksize or max(1, min(1000, math.ceil(
                n / (session.parallelism * _CHUNKS_PER_WORKER))))
            _drive(session, engine, fn, seed, _chunks(items, size), configs, finish)
        return results
    finally:
        bar.close()


def _drive(session: _Session, engine: Engine, fn: Callable[..., Any], seed: int, chunks: list[Any],
           configs: Sequence[Any], finish: Callable[[list[Any]], None]) -> None:
    """Submit every chunk, collect as they finish, rebuild a broken local pool."""
    attempts = [1] * len(chunks)
    pending = {session.submit(chunk, fn, seed, engine.threads): c
               for c, chunk in enumerate(chunks)}
    # how often to look whether the cluster is still there when nothing finishes
    poll = min(engine.timeout or math.inf, max(1.0, engine.connect_timeout / 4))
    last_done = time.monotonic()
    while pending:
        done, _ = cf.wait(pending, timeout=poll, return_when=cf.FIRST_COMPLETED)
        if not done:
            reason = session.alive()
            if reason is not None:
                raise EngineError(reason)
            if engine.timeout is not None and time.monotonic() - last_done > engine.timeout:
                raise EngineError(f"no task finished within {engine.timeout:g} s "
                                  f"({len(pending)} chunk(s) pending on "
                                  f"{engine.describe()}); raise timeout if tasks are "
                                  f"that long")
            continue
        last_done = time.monotonic()
        broken: list[int] = []
        for future in done:
            c = pending.pop(future)
            if future.cancelled():
                raise EngineError(f"the tasks were cancelled by {engine.describe()} (was "
                                  f"the scheduler or the cluster shut down?)")
            exc = future.exception()
            if exc is None:
                finish(future.result())
                continue
            if not _infrastructure(exc):
                # ``_run_chunk`` catches every task's exception, so this is the chunk's
                # results failing to travel back (an unpicklable value): one task's
                # failure. A chunk of several is run again task by task (tasks are
                # pure) to find whose result it is.
                if len(chunks[c]) == 1:
                    position = chunks[c][0][0]
                    finish([(position, False, (type(exc).__name__, (
                        f"its result could not be sent back from the worker "
                        f"({_one_line(exc) or 'no message'}); a task must return a "
                        f"picklable value")))])
                    continue
                for item in chunks[c]:
                    chunks.append([item])
                    attempts.append(1)
                    pending[session.submit([item], fn, seed, engine.threads)] = len(chunks) - 1
                continue
            if session.rebuildable and attempts[c] <= engine.retries:
                broken.append(c)
                continue
            raise EngineError(_died_message(engine, exc, chunks[c], configs, attempts[c]))
        if broken:
            # a dead process breaks the whole local pool: every unfinished chunk
            # failed with it; the tasks are pure, so run them again on a new pool
            broken += [pending.pop(f) for f in list(pending)]
            for c in broken:
                attempts[c] += 1
                if attempts[c] > engine.retries + 1:
                    raise EngineError(_died_message(engine, BrokenPoolNote(), chunks[c],
                                                    configs, attempts[c] - 1))
            session.rebuild()
            pending = {session.submit(chunks[c], fn, seed, engine.threads): c
                       for c in sorted(broken)}


class BrokenPoolNote(Exception):
    """Placeholder cause: the local pool broke again before this chunk could run."""

    def __str__(self) -> str:
        return "the local process pool broke again"
