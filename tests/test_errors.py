"""The wire form of errors: types survive it, and so does the built-in class of an env's own."""

from __future__ import annotations

import pickle

from openenv_gym.errors import (
    EnvServerError,
    InvalidActionError,
    InvalidRequestError,
    env_error,
    error_from_wire,
    error_to_wire,
)


def test_a_plugins_subclass_travels_as_the_class_it_extends() -> None:
    class NoSuchMoveError(InvalidActionError):  # a plugin env's own
        pass

    wire = error_to_wire(NoSuchMoveError("no such move"))
    assert wire == {"type": "InvalidActionError", "message": "no such move"}
    assert type(error_from_wire(wire)) is InvalidActionError


def test_an_envs_own_exception_keeps_its_built_in_class_over_the_wire_and_pickle() -> None:
    wire = error_to_wire(KeyError("spam"))
    assert wire == {"type": "EnvServerError", "message": "KeyError: 'spam'", "builtin": "KeyError"}
    error = error_from_wire(wire)
    assert isinstance(error, EnvServerError) and isinstance(error, KeyError)
    assert str(error) == "KeyError: 'spam'"  # not quoted again, as KeyError would
    # Ray moves errors between processes by pickle: the class must be found by name.
    again = pickle.loads(pickle.dumps(env_error(ValueError("bad"), "step")))
    assert isinstance(again, EnvServerError) and isinstance(again, ValueError)
    assert str(again) == "step: ValueError: bad"
    # Not one of the common classes: a plain EnvServerError, no "builtin".
    assert "builtin" not in error_to_wire(OSError("disk"))
    assert type(error_from_wire(error_to_wire(OSError("disk")))) is EnvServerError


def test_the_arguments_an_env_does_not_take_travel_as_a_field_over_the_wire_and_pickle() -> None:
    refused = InvalidRequestError("cannot make env 'echo'", unknown_arguments=["step_timeout", "x"])
    wire = error_to_wire(refused)
    assert wire == {"type": "InvalidRequestError", "message": "cannot make env 'echo'",
                    "unknown_arguments": ["step_timeout", "x"]}
    again = error_from_wire(wire)
    assert type(again) is InvalidRequestError and again.unknown_arguments == ("step_timeout", "x")
    assert pickle.loads(pickle.dumps(again)).unknown_arguments == ("step_timeout", "x")  # Ray's way
    # Any other refusal has none, and sends none.
    assert InvalidRequestError("bad seed").unknown_arguments == ()
    assert "unknown_arguments" not in error_to_wire(InvalidRequestError("bad seed"))


def test_an_older_worker_s_error_without_the_field_has_no_unknown_arguments() -> None:
    old = error_from_wire({"type": "InvalidRequestError",
                           "message": "got an unexpected keyword argument 'step_timeout'"})
    assert type(old) is InvalidRequestError and old.unknown_arguments == ()
    # A malformed field is ignored, not raised on.
    assert error_from_wire({"type": "InvalidRequestError", "message": "m",
                            "unknown_arguments": [1]}).unknown_arguments == ()


def test_a_gym_v0_env_s_type_error_names_the_arguments_it_refused() -> None:
    # Gymnasium's own TypeError for an argument the served env's creator does not take stays a
    # TypeError (as locally) and carries their names too, across the wire and a pickle.
    raised = TypeError("CartPoleEnv.__init__() got an unexpected keyword argument 'step_timeout'")
    raised.unknown_arguments = ("step_timeout",)  # type: ignore[attr-defined]
    wire = error_to_wire(env_error(raised, "cannot make env 'gym'"))
    assert wire["builtin"] == "TypeError" and wire["unknown_arguments"] == ["step_timeout"]
    again = error_from_wire(wire)
    assert isinstance(again, EnvServerError) and isinstance(again, TypeError)
    assert again.unknown_arguments == pickle.loads(pickle.dumps(again)).unknown_arguments == ("step_timeout",)
    assert error_from_wire({"type": "EnvServerError", "message": "m", "builtin": "TypeError"}).unknown_arguments == ()
