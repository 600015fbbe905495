"""Scoring a completion on a HumanEval problem with the checks out of the completion's reach.

The completion's program runs in a limited child (:class:`~.sandbox.Conversation` in the
runner's ``serve`` mode); the checks run here, in the worker, in a namespace built from the
problem's own prompt and test preamble. Inside the checks ``candidate`` is a stand-in:
each call sends the arguments to the child, which calls the real function and answers
with its result, both ways as plain data (msgpack with a few extension types:
:func:`~openenv_gym.envs.coding.runner.pack_plain`), which decodes to None, bool, int,
float, complex, str, bytes, list, tuple, set or dict and nothing else: an object
whose ``==`` always says yes, a patched builtin or a forged results file cannot pass a
check, because nothing of the candidate's runs where the checks are judged.

The feedback names a failed check by its number and how it failed (``check 3 of 7 failed
(AssertionError)``), never its source or the values it compares (:func:`failure_note`):
with more than one attempt, an agent would read the expected answers and send them back.

A check whose calls overrun ``per_check`` seconds, or during which the program exits,
fails alone: the child is killed and the next check starts a fresh one. A program that
never answers (it does not start) fails every check at once.

Example:
    >>> from openenv_gym.envs.coding.humaneval import get_problem
    >>> from openenv_gym.envs.coding.sandbox import Sandbox
    >>> box = Sandbox()
    >>> problem = get_problem(0)
    >>> result, passed = grade(box, problem.prompt + problem.canonical_solution, problem,
    ...                        timeout=10.0, per_check=3.0)
    >>> len(passed) == problem.num_checks, result.exit_code
    (True, 0)
    >>> box.close()
"""

from __future__ import annotations

import builtins
import os
import time
from functools import lru_cache
from pathlib import Path
from types import CodeType
from typing import Any

from openenv_gym.envs._exec import TRUNCATION_MARK, ExecResult, Limits
from openenv_gym.envs.coding.humaneval import Problem
from openenv_gym.envs.coding.runner import NotPlain, pack_plain, unpack_plain
from openenv_gym.envs.coding.sandbox import MAX_ANSWER, Conversation, Sandbox

__all__ = ["grade", "failure_note", "CandidateError", "CheckTimeout"]


class CandidateError(Exception):
    """A call of the candidate did not return plain data: it raised, returned something
    else, or its process exited."""


class CheckTimeout(CandidateError):
    """The candidate's calls in one check overran ``per_check`` seconds."""


class _Candidate:
    """Stands for the completion's entry point inside the checks."""

    def __init__(self, sandbox: Sandbox, program_path: str, entry_point: str, limits: Limits) -> None:
        self._args = (sandbox, limits, "serve", program_path, entry_point)
        self._conversation: Conversation | None = None
        self._failed_to_start = ""
        #: Until when the calls of the current check may run (``time.monotonic()``).
        self.deadline = 0.0
        #: What each child did, in order.
        self.results: list[ExecResult] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._failed_to_start:
            raise CandidateError(self._failed_to_start)
        try:
            request = pack_plain([args, kwargs])
        except NotPlain as exc:
            raise CandidateError(f"the check's arguments cannot be sent to the program: {exc}") from None
        conversation = self._conversation or self._start()
        frame = conversation.ask(request, self.deadline)
        if frame is None:
            raise self._lost(conversation, "during the call")
        try:
            answer = unpack_plain(frame)
        except NotPlain as exc:
            self.stop()
            raise CandidateError(f"the program's answer was refused: {exc}") from None
        if type(answer) is list and len(answer) == 2 and answer[0] == "ok":
            return answer[1]
        if type(answer) is list and len(answer) == 2 and answer[0] in ("raised", "refused") \
                and type(answer[1]) is str:
            raise CandidateError(answer[1])
        self.stop()
        raise CandidateError("the program's answer was refused: not an answer")

    def _start(self) -> Conversation:
        """A fresh child with the program loaded (raises when it does not get that far)."""
        conversation = self._conversation = Conversation(*self._args)
        if conversation.receive(self.deadline) is None:
            error = self._lost(conversation, "before it was ready to take calls")
            self._failed_to_start = str(error) if str(error) != "timed out" else \
                "the program did not load within the check's time"
            raise CandidateError(self._failed_to_start)
        return conversation

    def _lost(self, conversation: Conversation, when: str) -> CandidateError:
        """End a child that gave no answer; the error says why."""
        timed_out = time.monotonic() >= self.deadline
        flooded, oversized = conversation.child.flooded, conversation.oversized
        result = self.stop(timed_out)
        if timed_out:
            return CheckTimeout("timed out")
        why = ("was killed: it kept writing past the output cap" if flooded else
               "was killed: out of memory at the sandbox's memory limit" if result.oom_killed else
               "was killed at the sandbox's CPU-time limit (all its threads together)" if result.cpu_killed else
               f"answered with more than {MAX_ANSWER >> 20} MiB" if oversized else
               f"exited with code {result.exit_code}")
        return CandidateError(f"the program {why} {when}")

    def stop(self, timed_out: bool = False) -> ExecResult:
        """End the current child (the next call starts a fresh one)."""
        assert self._conversation is not None
        result = self._conversation.end(timed_out=timed_out)
        self._conversation = None
        self.results.append(result)
        return result

    def close(self) -> None:
        if self._conversation is not None:
            self.stop()


@lru_cache(maxsize=256)
def _compiled(problem: Problem) -> tuple[CodeType, tuple[tuple[CodeType, bool, str], ...]]:
    # optimize=0: the checks are assert statements, which the worker's own optimization
    # level (python -O, PYTHONOPTIMIZE) would strip, passing every completion.
    setup = compile(problem.prompt + "\n" + problem.preamble, f"<{problem.task_id} prompt and test>", "exec",
                    optimize=0)
    plan = tuple((compile(source, "<test>", "exec", optimize=0), is_check, source)
                 for source, is_check in problem.plan)
    return setup, plan


def grade(sandbox: Sandbox, program: str, problem: Problem, timeout: float,
          per_check: float, show_checks: bool = False) -> tuple[ExecResult, set[int]]:
    """Run ``program`` in a child and judge it with ``problem``'s checks, one at a time.

    Args:
        sandbox: The env's folder (a fresh working directory is made for the program, and
            everything it wrote is removed when the checks are done).
        program: The prompt and the completion.
        problem: The problem whose checks judge it.
        timeout: Wall-clock seconds for the whole step.
        per_check: Seconds one check's calls may take.
        show_checks: Also show each failed check's source and its error's message: they
            hold the expected answers (see :func:`failure_note`).

    Returns:
        What the program printed, with a line per failed check on stderr (``exit_code`` 0
        when every check passed, else 1; ``timed_out`` when the step's timeout cut the
        checks short), and the indices of the checks that passed.
    """
    try:
        return _grade(sandbox, program, problem, timeout, per_check, show_checks)
    finally:
        # Free the disk now, not at the next step: the worker's other sessions share it.
        sandbox.fresh_workdir()


def _grade(sandbox: Sandbox, program: str, problem: Problem, timeout: float,
           per_check: float, show_checks: bool) -> tuple[ExecResult, set[int]]:
    started = time.monotonic()
    end = started + timeout
    sandbox.fresh_workdir()
    program_path = os.path.join(sandbox.io, "program.py")
    Path(program_path).write_text(program, encoding="utf-8")
    candidate = _Candidate(sandbox, program_path, problem.entry_point, sandbox.child_limits(timeout))
    setup, plan = _compiled(problem)
    # The checks' namespace: the problem's own prompt (helpers such as encode_cyclic) and
    # test preamble, never the completion's code.
    namespace: dict[str, Any] = {"__name__": "__check__", "__builtins__": builtins}
    exec(setup, namespace)
    namespace["candidate"] = namespace[problem.entry_point] = candidate
    passed: set[int] = set()
    notes: list[str] = []
    index = 0
    cut_short = False
    try:
        for code, is_check, source in plan:
            now = time.monotonic()
            cut_short = cut_short or now >= end
            error: BaseException | None = None
            if cut_short:
                note = f"not run: the step's {timeout:g} s timeout passed"
            else:
                candidate.deadline = min(now + per_check, end)
                try:
                    exec(code, namespace)
                    note = ""
                except CheckTimeout:
                    note = f"timed out after {min(per_check, end - now):.3g} s"
                except CandidateError as exc:  # what the program did: its own doing, shown
                    note = f"failed ({exc})"
                except Exception as exc:  # the check's own verdict (AssertionError) or error
                    note, error = "failed", exc
            if is_check:
                if not note:
                    passed.add(index)
                else:
                    notes.append(failure_note(index, problem.num_checks, note, error,
                                              source if show_checks else None))
                index += 1
    finally:
        candidate.close()
    return _combine(candidate.results, notes, sandbox.output_limit, started, cut_short, passed, index), passed


def failure_note(index: int, total: int, note: str, error: BaseException | None = None,
                 source: str | None = None) -> str:
    """The line that reports a failed check to the agent.

    By default it says which check failed and how, never what the check compares: the
    source (``assert candidate(1.33) == 0.33``) or the message of the check's own error
    (an ``AssertionError`` message, a ``TypeError`` naming the values) hold the inputs
    and the expected answers, and an agent with a second attempt would send them back
    as a lookup table.

    Args:
        index: The check's index (0-based; shown 1-based).
        total: The problem's number of checks.
        note: How it failed (``"failed"``, ``"timed out after 3 s"``, ``"failed (the
            program raised ...)"``: what the program did is its own doing, kept).
        error: The check's own exception, if that is how it failed (its type is shown).
        source: The check's source, shown with the error's message (opt-in: the answers).

    Returns:
        ``"check 3 of 7 failed (AssertionError)"`` and the like.

    Example:
        >>> failure_note(2, 7, "failed", AssertionError("no"))
        'check 3 of 7 failed (AssertionError)'
        >>> failure_note(2, 7, "failed", AssertionError("no"), "assert candidate(1) == 2")
        'check 3 of 7 failed (AssertionError: no): assert candidate(1) == 2'
    """
    if error is not None:
        message = f": {error}" if source is not None and str(error) else ""
        note = f"{note} ({type(error).__name__}{message})"
    line = f"check {index + 1} of {total} {note}"
    return f"{line}: {source[:200]}" if source is not None else line


def _combine(results: list[ExecResult], notes: list[str], limit: int, started: float,
             cut_short: bool, passed: set[int], total: int) -> ExecResult:
    """One result for the step: every child's output, then the notes on failed checks."""
    stdout = "".join(r.stdout for r in results)
    stderr = "".join(r.stderr for r in results)
    restarts = len(results) - 1
    if restarts > 0:
        notes.append(f"[the program was restarted {restarts} time(s): a check that loses it "
                     "(a timeout, an exit) leaves a fresh one to the next]")
    stderr += "".join(note + "\n" for note in notes)
    truncated = any(r.truncated for r in results)
    if len(stdout) > limit:
        stdout, truncated = stdout[:limit] + TRUNCATION_MARK.format(limit=limit), True
    if len(stderr) > limit:
        stderr, truncated = stderr[:limit] + TRUNCATION_MARK.format(limit=limit), True
    return ExecResult(stdout=stdout, stderr=stderr, exit_code=0 if len(passed) == total else 1,
                      timed_out=cut_short, wall_time=time.monotonic() - started, truncated=truncated)
