"""`import openenv_gym` loads no HTTP client stack (ssl, http.client): only attaching to a server (base_url=) uses it.

Nor does the client's path load the server or web stack (fastapi, uvicorn, starlette, pydantic,
the env service): those run in workers, and the trainer should not pay for them.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Modules only a worker needs: the web stack, pydantic (env models), the env service.
SERVER_STACK = ("fastapi", "uvicorn", "starlette", "pydantic", "openenv_gym.models", "openenv_gym.envs.base",
                "openenv_gym.server.service", "openenv_gym.server.http", "openenv_gym.server.web",
                "openenv_gym.server.main", "openenv_gym.server.sessions")


def _loaded(code: str, names: tuple[str, ...]) -> list[str]:
    code += f"\nimport sys\nprint(*sorted(m for m in {names!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.split()


def test_import_loads_no_http_client_stack() -> None:
    loaded = _loaded("import openenv_gym", ("ssl", "http.client", "urllib.request"))
    assert loaded == [], f"import openenv_gym loaded {loaded}"


@pytest.mark.parametrize("code", [
    "import openenv_gym",
    "import openenv_gym.vector",
    "from openenv_gym import RemoteEnv, RemoteVectorEnv",
    # The docker provider's image lookup finds an env's module this way: it imports the
    # module's parent packages (openenv_gym.envs), which must not load the env contract.
    "import importlib.util, openenv_gym\nimportlib.util.find_spec('openenv_gym.envs.echo.env')",
])
def test_client_imports_load_no_server_stack(code: str) -> None:
    loaded = _loaded(code, SERVER_STACK)
    assert loaded == [], f"{code!r} loaded {loaded}"


def test_process_workers_load_no_server_stack_in_the_trainer() -> None:
    # A vector env of an env whose actions are a pydantic model (Echo, Coding, Git) loads
    # pydantic here, to check a batch's actions as their workers do before any is sent
    # (vector/precheck.py); one of array actions loads none of it.
    code = ("import gymnasium as gym, openenv_gym\n"
            "envs = gym.make_vec('OpenEnv/Gym-v0', num_envs=2, env_id='CartPole-v1', provider='process', "
            "envs_per_worker=2)\n"
            "envs.reset(seed=0)\n"
            "envs.step(envs.action_space.sample())\n"
            "envs.close()\n"
            "env = gym.make('OpenEnv/Echo-v0', provider='process')\n"
            "env.reset(seed=0)\n"
            "env.step({'message': 'hi'})\n"
            "env.close()")
    loaded = _loaded(code, SERVER_STACK)
    assert loaded == [], f"gym.make / gym.make_vec on process workers loaded {loaded} in the trainer"
