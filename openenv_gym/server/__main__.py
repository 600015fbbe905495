"""``python -m openenv_gym.server``: run one worker (see :mod:`openenv_gym.server.main`)."""

from openenv_gym.providers._runtime import apply_trainer_path

apply_trainer_path()  # before the env's code is imported: the trainer's folders (worker_environ)

from openenv_gym.server.main import main  # noqa: E402

main()
