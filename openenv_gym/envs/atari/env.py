"""Atari-v0: an ALE game through ale-py, optionally preprocessed inside the worker.

Without ``preprocess`` the env is exactly ``gym.make("ALE/<Game>-v5", ...)`` with the same
settings: same seed and actions give the same frames, rewards and flags. With
``preprocess=True`` it is that env (frameskip 1) wrapped in Gymnasium's own
:class:`~gymnasium.wrappers.AtariPreprocessing` (noop starts, max-pooled frame skip, 84×84
grayscale or color, optionally scaled to [0, 1], terminal on life loss), optional reward
clipping and :class:`~gymnasium.wrappers.FrameStackObservation`, so only the small frames
cross the wire; its steps make the wrappers' calls straight on the emulator
(:class:`_PreprocessedStep`), with the same results.

Example:
    >>> env = AtariEnv(game="pong", preprocess=True, frame_stack=4)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype
    ((4, 84, 84), dtype('uint8'))
    >>> env.close()
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np

from openenv_gym._numbers import is_finite, is_flag, is_int
from openenv_gym.envs.atari.games import rom_id
from openenv_gym.envs.base import Environment
from openenv_gym.errors import InvalidRequestError
from openenv_gym.models import State

__all__ = ["AtariEnv", "make_ale_env"]

# AtariPreprocessing's options and the wrappers after it, each with the value that means "not
# given": without preprocess=True they would be silently ignored, so given, they are refused.
_PREPROCESS_ONLY: dict[str, Any] = {
    "noop_max": None, "screen_size": None, "clip_rewards": False, "terminal_on_life_loss": False,
    "frame_stack": 1, "grayscale_obs": True, "grayscale_newaxis": False, "scale_obs": False}

#: Largest side of a preprocessed frame. The ALE screen is 160x210, so a larger frame only
#: interpolates it; 1024 leaves any upscaling a model may want (a 1024x1024 color frame is
#: 3 MiB). AtariPreprocessing takes any positive size, and allocates its buffers and its
#: space's bounds at make: screen_size=100000 asked for ~10 GB.
MAX_SCREEN_SIDE = 1024
#: Most frames stacked. DQN stacks 4 and longer histories seldom pass 16; every frame is
#: allocated in the stack and in its space's bounds at make (100000 frames of 84x84: 5.5 GB).
MAX_FRAME_STACK = 64
#: Most no-op starts. Gymnasium's (and DQN's) default is 30; each no-op is one emulated frame at
#: reset, so noop_max=10**9 made a reset run for hours. 10,000 frames are ~3 minutes of play at
#: 60 fps, 333 times the default; a reset that draws the most took at most 3.8 s over all 102
#: ROMs that take no-op starts (1.6 s median; a loaded 2-core machine).
MAX_NOOP = 10_000
#: Most frames a step skips. ALE's v5 default is 4 (DQN's too) and ALE takes any positive count,
#: each frame emulated within the step: frameskip=10**8 made one step run for hours (remotely
#: only a step timeout ended it). 10,000 frames a step took at most ~1 s (breakout; pong and
#: space_invaders 0.3 s), as MAX_NOOP's bound does at reset.
MAX_FRAMESKIP = 10_000


def make_ale_env(game: str, *, obs_type: str = "rgb", frameskip: int | tuple[int, int] = 4,
                 repeat_action_probability: float = 0.25, full_action_space: bool = False,
                 mode: int | None = None, difficulty: int | None = None,
                 max_num_frames_per_episode: int = 108_000, render_mode: str | None = None,
                 continuous: bool = False, continuous_action_threshold: float | None = None,
                 preprocess: bool = False, noop_max: int | None = None,
                 screen_size: int | tuple[int, int] | None = None,
                 terminal_on_life_loss: bool = False, clip_rewards: bool = False,
                 frame_stack: int = 1, grayscale_obs: bool = True, grayscale_newaxis: bool = False,
                 scale_obs: bool = False) -> gym.Env:
    """Build the (optionally preprocessed) ALE env that :class:`AtariEnv` serves.

    This is also the local reference: ``make_ale_env(...)`` equals
    ``gym.make("ALE/<Game>-v5", ...)`` plus the same Gymnasium wrappers.

    Args:
        See :class:`AtariEnv`.

    Returns:
        A Gymnasium env.
    """
    from ale_py.env import AtariEnv as ALEEnv

    # Tuples arrive as lists (arguments reach workers as JSON): ALE's stochastic skip (2, 5),
    # AtariPreprocessing's (width, height) screen size.
    if isinstance(frameskip, list):
        frameskip = tuple(frameskip)
    if isinstance(screen_size, list):
        screen_size = tuple(screen_size)
    for flag, value in (("full_action_space", full_action_space), ("continuous", continuous),
                        ("preprocess", preprocess), ("terminal_on_life_loss", terminal_on_life_loss),
                        ("clip_rewards", clip_rewards), ("grayscale_obs", grayscale_obs),
                        ("grayscale_newaxis", grayscale_newaxis), ("scale_obs", scale_obs)):
        if not is_flag(value):
            raise InvalidRequestError(f"{flag} must be True or False, got {value!r}")
    # ALE's setMode/setDifficulty refuse these with a bare pybind TypeError ("incompatible
    # function arguments ... Invoked with types: ALEInterface, int" for -1), and take
    # repeat_action_probability NaN or 1.5 as 1.0 (every action ignored): say so by name.
    for name, value in (("mode", mode), ("difficulty", difficulty)):
        if value is not None and not is_int(value, 0):
            raise InvalidRequestError(f"{name} must be None (the ROM's default) or a whole number >= 0, "
                                      f"got {value!r}; {_modes_and_difficulties(game)}")
    if not is_finite(repeat_action_probability) or not 0 <= repeat_action_probability <= 1:
        raise InvalidRequestError(f"repeat_action_probability must be a number in [0, 1] (v5: 0.25), "
                                  f"got {repeat_action_probability!r}")
    if not is_int(max_num_frames_per_episode, 0):
        raise InvalidRequestError(f"max_num_frames_per_episode must be a whole number >= 0 (0: no "
                                  f"limit; v5: 108000), got {max_num_frames_per_episode!r}")
    if not is_int(frame_stack, 1, MAX_FRAME_STACK):
        raise InvalidRequestError(f"frame_stack must be a whole number >= 1 and <= {MAX_FRAME_STACK} "
                                  f"(frames stacked; DQN's: 4), got {frame_stack!r}")
    if continuous_action_threshold is not None and not continuous:
        raise InvalidRequestError("continuous_action_threshold applies with continuous=True only; "
                                  "set it or drop it")
    continuous_action_threshold = 0.5 if continuous_action_threshold is None else continuous_action_threshold
    # ALE takes any number, but a joystick component (|r·cos θ|, |r·sin θ|, fire: all <= 1)
    # counts only above it: at 1 or more every action is a no-op, below 0 fire is always held.
    if not is_finite(continuous_action_threshold) or not 0 <= continuous_action_threshold < 1:
        raise InvalidRequestError(f"continuous_action_threshold must be a number in [0, 1) (ALE's "
                                  f"default: 0.5), got {continuous_action_threshold!r}")
    given = {name: value for name, value in (
        ("noop_max", noop_max), ("screen_size", screen_size), ("clip_rewards", clip_rewards),
        ("terminal_on_life_loss", terminal_on_life_loss), ("frame_stack", frame_stack),
        ("grayscale_obs", grayscale_obs), ("grayscale_newaxis", grayscale_newaxis),
        ("scale_obs", scale_obs)) if value != _PREPROCESS_ONLY[name]}
    if not preprocess and given:
        *names, last = _PREPROCESS_ONLY
        raise InvalidRequestError(f"{', '.join(names)} and {last} apply with preprocess=True only "
                                  f"(got {', '.join(f'{k}={v!r}' for k, v in given.items())}); "
                                  "set it or drop them")
    noop_max = 30 if noop_max is None else noop_max
    screen_size = 84 if screen_size is None else screen_size
    if not is_int(noop_max, 0, MAX_NOOP):
        raise InvalidRequestError(f"noop_max must be a whole number >= 0 and <= {MAX_NOOP} (0: no no-op "
                                  f"starts; Gymnasium's default: 30), got {noop_max!r}")
    sides = screen_size if isinstance(screen_size, tuple) and len(screen_size) == 2 else (screen_size,)
    if not all(is_int(side, 1, MAX_SCREEN_SIDE) for side in sides):
        raise InvalidRequestError(f"screen_size must be a whole number, or a (width, height) pair of them, "
                                  f"in 1..{MAX_SCREEN_SIDE} (default 84; the screen is 160x210, a larger "
                                  f"frame only interpolates it), got {screen_size!r}")
    # AtariPreprocessing takes Python ints only (np.int64(84) is refused with a bare ValueError).
    screen_size = tuple(map(int, screen_size)) if isinstance(screen_size, tuple) else int(screen_size)
    # AtariPreprocessing reads the screen from the emulator, gray or in color as grayscale_obs
    # says, so obs_type "rgb" and "grayscale" give the same frames; it sizes its buffers from
    # the inner env's frames, so locally "ram" fails, and so does a gray inner env for color.
    if preprocess and obs_type not in ("rgb", "grayscale"):
        raise InvalidRequestError(f"preprocess=True reads the screen: obs_type must be 'rgb' or "
                                  f"'grayscale' (grayscale_obs picks the frames' colors), got "
                                  f"obs_type={obs_type!r}")
    if preprocess and obs_type == "grayscale" and not grayscale_obs:
        raise InvalidRequestError("grayscale_obs=False keeps the screen's colors, which "
                                  "obs_type='grayscale' has not; use obs_type='rgb' (the default)")
    if preprocess and grayscale_newaxis and not grayscale_obs:
        raise InvalidRequestError("grayscale_newaxis adds a channel axis to gray frames; color frames "
                                  "(grayscale_obs=False) have one: drop it")
    # No-op starts step action 0, an index, which a continuous env refuses (ALE asserts a
    # float32 (r, theta, fire) array): locally that fails at the first reset.
    if preprocess and continuous and noop_max != 0:
        raise InvalidRequestError("continuous=True takes (r, theta, fire) actions, and the no-op starts "
                                  "of preprocess=True step the discrete action 0: set noop_max=0")
    # Only whole numbers are bounded here (and made Python ints: ALE refuses np.int64 as "Invalid
    # frameskip type"); ALE names any other value's fault itself.
    skips = frameskip if isinstance(frameskip, tuple) else (frameskip,)
    if any(is_int(skip) and skip > MAX_FRAMESKIP for skip in skips):
        raise InvalidRequestError(f"frameskip must be at most {MAX_FRAMESKIP} frames a step (v5: 4; each is "
                                  f"emulated within the step), got {frameskip!r}")
    if all(is_int(skip) for skip in skips):
        frameskip = tuple(map(int, skips)) if isinstance(frameskip, tuple) else int(frameskip)
    if preprocess and not is_int(frameskip, 1):
        raise InvalidRequestError(f"preprocess=True skips a fixed number of frames (an int >= 1); got "
                                  f"frameskip={frameskip!r} (ALE's stochastic (low, high) applies "
                                  "without preprocess)")
    # AtariPreprocessing skips frames itself (max-pooling the last two) and needs frameskip 1.
    # It reads the screen from the emulator itself and drops the inner env's observations:
    # make those the 128-byte RAM, not four discarded 100 KB RGB copies per step.
    try:
        env: gym.Env = ALEEnv(game=rom_id(game), mode=mode, difficulty=difficulty,
                              obs_type="ram" if preprocess else obs_type,
                              frameskip=1 if preprocess else frameskip,
                              repeat_action_probability=repeat_action_probability,
                              full_action_space=full_action_space, continuous=continuous,
                              continuous_action_threshold=continuous_action_threshold,
                              max_num_frames_per_episode=max_num_frames_per_episode,
                              render_mode=render_mode)
    except RuntimeError as exc:  # ALE's "Invalid game mode requested" names neither
        if mode is None and difficulty is None:
            raise
        raise InvalidRequestError(
            f"{exc} for {game!r} (mode={mode!r}, difficulty={difficulty!r}); "
            f"{_modes_and_difficulties(game)}") from None
    if not preprocess:
        return env
    first = env.unwrapped.get_action_meanings()[0]
    if noop_max and first != "NOOP":  # Gymnasium's wrapper refuses it with a bare ValueError
        env.close()
        raise InvalidRequestError(f"the no-op starts of preprocess=True step action 0, which is {first} in "
                                  f"{game!r}'s minimal action set: set noop_max=0, or full_action_space=True "
                                  "(whose action 0 is NOOP)")
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TransformReward

    env = AtariPreprocessing(_ScreenSized(env), noop_max=noop_max, frame_skip=frameskip, screen_size=screen_size,
                             terminal_on_life_loss=terminal_on_life_loss, grayscale_obs=grayscale_obs,
                             grayscale_newaxis=grayscale_newaxis, scale_obs=scale_obs)
    if clip_rewards:
        env = TransformReward(env, lambda r: float(np.sign(r)))  # DQN's sign clipping
    if frame_stack > 1:
        env = FrameStackObservation(env, frame_stack)
    return env


def _modes_and_difficulties(game: str) -> str:
    """``"its modes are [0, 1], its difficulties [0, 1, 2, 3]"`` for ``game``'s ROM."""
    from ale_py.env import AtariEnv as ALEEnv

    ale = ALEEnv(game=rom_id(game)).ale
    return (f"its modes are {[int(m) for m in ale.getAvailableModes()]}, its difficulties "
            f"{[int(d) for d in ale.getAvailableDifficulties()]}")


class _ScreenSized(gym.Wrapper):
    """Declares the screen's shape for :class:`AtariPreprocessing`, which sizes its buffers
    from the inner observation space but reads frames from the emulator directly; the inner
    env's own (RAM) observations pass through unused. Measured: -56 µs per Pong step."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        height, width = env.unwrapped.ale.getScreenDims()
        # AtariPreprocessing sizes gray buffers from the first two sides, color ones from all three.
        self.observation_space = gym.spaces.Box(0, 255, (height, width, 3), np.uint8)


class _PreprocessedStep:
    """One step of ``make_ale_env(..., preprocess=True)``'s wrapper chain (AtariPreprocessing,
    then reward clipping and frame stacking if asked) as one call straight on the emulator.

    Each wrapper's step goes through ale-py's ``AtariEnv.step`` once per skipped frame (its
    checks, a RAM copy, an info dict) and the frame stack deep-copies its output: 16–20 µs
    of a ~470 µs Pong step (``benchmarks/RESULTS.md``, ``finrl-atari`` notes). This runs the
    same calls in the same order on the same state (the wrappers' own buffers, lives and
    frame queue, so their ``reset`` still applies), and gives exactly their result
    (``tests/envs/test_atari_fast_step.py``). Discrete actions only: continuous ones keep the
    wrappers' path.
    """

    def __init__(self, env: gym.Env) -> None:
        from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TransformReward

        self.stack = env if isinstance(env, FrameStackObservation) else None
        inner = env.env if self.stack is not None else env
        self.clip = inner.func if isinstance(inner, TransformReward) else None
        pre = inner.env if self.clip is not None else inner
        if not isinstance(pre, AtariPreprocessing):
            raise TypeError(f"expected make_ale_env's preprocessing chain, got {env}")
        self.pre = pre
        self.ale_env = pre.env.unwrapped
        self.ale = self.ale_env.ale
        self.screen = self.ale.getScreenGrayscale if pre.grayscale_obs else self.ale.getScreenRGB

    def __call__(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        pre, ale, screen = self.pre, self.ale, self.screen
        action_idx = self.ale_env._action_set[action]
        skip = pre.frame_skip
        total_reward, terminated, truncated = 0.0, False, False
        # AtariPreprocessing.step, with ale-py's AtariEnv.step (frameskip 1) inlined.
        for t in range(skip):
            total_reward += 0.0 + ale.act(action_idx, 1.0)
            terminated = ale.game_over(with_truncation=False)
            truncated = ale.game_truncated()
            pre.game_over = terminated
            if pre.terminal_on_life_loss:
                new_lives = ale.lives()
                terminated = terminated or new_lives < pre.lives
                pre.game_over = terminated
                pre.lives = new_lives
            if terminated or truncated:
                break
            if t == skip - 2:
                screen(pre.obs_buffer[1])
            elif t == skip - 1:
                screen(pre.obs_buffer[0])
        info = self.ale_env._get_info()
        obs = pre._get_obs()
        reward = total_reward if self.clip is None else self.clip(total_reward)
        if self.stack is not None:
            # FrameStackObservation.step: its concatenate is np.stack into a buffer it then
            # deep-copies; np.array of its queue gives the same fresh array (in half the time
            # of np.stack: 1.4 against 3.2 µs).
            self.stack.obs_queue.append(obs)
            obs = np.array(self.stack.obs_queue)
        return obs, reward, terminated, truncated, info


class AtariEnv(Environment):
    """An ALE game served remotely; frames travel as raw uint8 bytes.

    Args:
        game: A ROM bundled with ale-py: ``"pong"``, ``"Breakout"``, ``"ALE/Pong-v5"``.
        obs_type: ``"rgb"`` (210×160×3), ``"grayscale"`` (210×160) or ``"ram"`` (128 bytes).
        frameskip: Frames per step (v5 default 4), or ALE's stochastic ``(low, high)``; with
            ``preprocess`` the wrapper's skip (an int). At most 10,000.
        repeat_action_probability: Sticky actions (v5 default 0.25).
        full_action_space: All 18 actions instead of the game's minimal set.
        continuous: ALE's continuous actions: a float32 ``(r, theta, fire)`` in
            ``Box([0, -pi, 0], [1, pi, 1])``, the joystick in polar coordinates, instead of
            ``Discrete``.
        continuous_action_threshold: Above it a joystick direction (``r·cos θ``,
            ``r·sin θ``) or ``fire`` counts as pressed (continuous; ALE's default 0.5).
        mode: Game mode (None: the ROM's default).
        difficulty: Game difficulty (None: the ROM's default).
        max_num_frames_per_episode: Truncation in frames (v5: 108,000).
        preprocess: Apply standard Atari preprocessing in the worker.
        noop_max: Most no-op actions at reset, 0..10000 (preprocess; default 30, 0 disables).
        screen_size: Side of the resized square frame, or ``(width, height)``, each in
            1..1024 (preprocess; default 84).
        terminal_on_life_loss: End the episode when a life is lost (preprocess).
        clip_rewards: Rewards become their sign (preprocess).
        frame_stack: Stack this many frames on a leading axis, 1..64 (preprocess; 1: none).
        grayscale_obs: Gray frames; False: RGB ones, ``(84, 84, 3)`` (preprocess; default True).
        grayscale_newaxis: Frames of shape (84, 84, 1) instead of (84, 84) (preprocess): what
            SB3's ``VecFrameStack`` and ``CnnPolicy`` want when frames are stacked in the
            trainer (a quarter of the bytes on the wire of ``frame_stack=4``).
        scale_obs: float32 frames in [0, 1] instead of uint8 (preprocess): four times the
            bytes on the wire, and SB3's ``CnnPolicy``, which scales uint8 images itself,
            no longer takes them for images.
        render_mode: ``"rgb_array"`` for full-color frames.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    # What ale-py's AtariEnv reports every step (a seeded reset adds "seeds": that one is inline).
    info_types = {"lives": "int", "episode_frame_number": "int", "frame_number": "int"}

    def __init__(self, game: str = "pong", obs_type: Literal["rgb", "grayscale", "ram"] = "rgb",
                 frameskip: int | tuple[int, int] = 4, repeat_action_probability: float = 0.25,
                 full_action_space: bool = False, mode: int | None = None,
                 difficulty: int | None = None, max_num_frames_per_episode: int = 108_000,
                 continuous: bool = False, continuous_action_threshold: float | None = None,
                 preprocess: bool = False, noop_max: int | None = None,
                 screen_size: int | tuple[int, int] | None = None,
                 terminal_on_life_loss: bool = False, clip_rewards: bool = False,
                 frame_stack: int = 1, grayscale_obs: bool = True, grayscale_newaxis: bool = False,
                 scale_obs: bool = False, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        self.game = rom_id(game)
        self.inner = make_ale_env(
            self.game, obs_type=obs_type, frameskip=frameskip,
            repeat_action_probability=repeat_action_probability, full_action_space=full_action_space,
            mode=mode, difficulty=difficulty, max_num_frames_per_episode=max_num_frames_per_episode,
            render_mode=render_mode, continuous=continuous,
            continuous_action_threshold=continuous_action_threshold, preprocess=preprocess,
            noop_max=noop_max, screen_size=screen_size, terminal_on_life_loss=terminal_on_life_loss,
            clip_rewards=clip_rewards, frame_stack=frame_stack, grayscale_obs=grayscale_obs,
            grayscale_newaxis=grayscale_newaxis, scale_obs=scale_obs)
        self.action_space = self.inner.action_space
        self.observation_space = self.inner.observation_space
        self.preprocess = preprocess
        self.continuous = continuous
        self._lives = 0
        self._step = _PreprocessedStep(self.inner) if preprocess and not continuous else None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        obs, info = self.inner.reset(seed=seed, options=options)
        self._lives = int(info.get("lives", 0))
        return obs, info

    def step(self, action: Any):
        # parse_action gave a float32 array of the Box (what ALE asserts) or an index.
        if self._step is not None:
            obs, reward, terminated, truncated, info = self._step(int(action))
        else:
            obs, reward, terminated, truncated, info = self.inner.step(action if self.continuous else int(action))
        self._lives = int(info.get("lives", self._lives))
        return obs, float(reward), terminated, truncated, info

    def render(self) -> np.ndarray | None:
        """The current full-color frame (210×160×3) in ``rgb_array`` mode."""
        return self.inner.render()

    def get_action_meanings(self) -> list[str]:
        """Names of the actions (``["NOOP", "FIRE", "RIGHT", ...]``)."""
        return list(self.inner.unwrapped.get_action_meanings())

    def close(self) -> None:
        self.inner.close()

    def state(self) -> State:
        return State(game=self.game, lives=self._lives, preprocess=self.preprocess,
                     frame_number=int(self.inner.unwrapped.ale.getEpisodeFrameNumber()))
