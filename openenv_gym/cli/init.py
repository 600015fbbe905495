"""``openenv-gym init NAME``: scaffold a new environment package (see :mod:`openenv_gym.scaffold`)."""

from __future__ import annotations

import argparse
import os
import shlex

from openenv_gym.cli._args import exit_codes
from openenv_gym.cli._ui import FAILED, OK, USAGE, console, error

__all__ = ["register"]


def _init(args: argparse.Namespace) -> int:
    from openenv_gym.scaffold import create, names

    try:
        written = create(args.name, args.dir, force=args.force)
    except ValueError as exc:
        return error(str(exc), code=USAGE)
    except OSError as exc:
        if isinstance(exc, FileExistsError) and exc.filename is None:  # create()'s: a project is there
            return error(str(exc), "choose another --dir, or pass --force to overwrite", FAILED)
        # The system's (--dir is a file or read-only), or create()'s: a file where the project goes.
        problem = str(exc) if exc.filename is None else \
            f"cannot write the project to {exc.filename}: {exc.strerror}"
        return error(problem, "choose a --dir that is a folder you can write to (created if missing)",
                     FAILED)
    root = os.path.join(args.dir, args.name)
    quoted = shlex.quote(root)  # the "next:" lines are for copying into a shell
    n = names(args.name)
    # markup=False: paths and "[test]" are text, not rich markup (rich drops "[test]").
    console.print(f"created {n['gym_id']} in {root}:", markup=False)
    for path in written:
        console.print(f"  {os.path.relpath(path, args.dir)}", markup=False)
    console.print("next:", style="bold")
    # '.[test]': the project's test extra brings pytest, which openenv-gym does not install.
    console.print(f"  cd {quoted} && pip install -e '.[test]' && python -m pytest tests",
                  soft_wrap=True, markup=False)
    console.print(f"  python -c \"import gymnasium as gym, openenv_gym; "
                  f"env = gym.make('{n['gym_id']}', provider='process'); print(env.reset(seed=0))\"",
                  soft_wrap=True)
    console.print(f"  openenv-gym build {args.name}   # its Docker image, for provider='docker'",
                  soft_wrap=True)
    return OK


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``init``."""
    p = sub.add_parser("init", help="scaffold a new environment package",
                       description="Write a package with models, environment logic, a catalog "
                                   "entry point, tests and a README; it passes its own tests as "
                                   "generated, and after `pip install -e` `openenv-gym build NAME` "
                                   "builds its image.",
                       epilog=exit_codes("written", "the folder exists and is not empty, "
                                                     "or cannot be written"))
    p.add_argument("name", help="env and package name: lowercase words joined by single '_', "
                                "e.g. my_env (gives OpenEnv/MyEnv-v0 and the distribution my-env)")
    p.add_argument("--dir", default=".", help="folder to create the project in (default: here)")
    p.add_argument("--force", action="store_true", help="overwrite an existing project folder")
    p.set_defaults(handler=_init)
