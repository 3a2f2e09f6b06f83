#!/usr/bin/env python3
"""gym_ref - reference trajectories for t/7001-es-env.c.

Implements, in plain Python floats (IEEE double), the step equations that
Gymnasium publishes for CartPole-v1 (gymnasium/envs/classic_control/
cartpole.py) and Pendulum-v1 (.../pendulum.py), and prints C array rows
that the test compares the C environments against. It does not import the
C code or Gymnasium (no package of it reaches this machine): it is an
independent transcription of the published equations, run once by hand:

    python3 examples/es/gym_ref.py > /tmp/ref.txt

Each row is the action, then what the step returns: for CartPole the state
(= observation) x, x_dot, theta, theta_dot, the reward and the terminated
flag; for Pendulum the state th, thdot, the observation's cos(th), sin(th)
(its third element is thdot) and the reward.

With --gymnasium it prints nothing of that: it imports Gymnasium (from
PYTHONPATH: a checkout of its source and numpy are enough) and runs the
same trajectories through Gymnasium's own CartPoleEnv and PendulumEnv, from
the same states, and checks every value and flag against this
transcription, and the registered time limits and solved score. Exit 0 when
all agree. Done on 2026-11-22 with Gymnasium 1.4.0 (source at commit
3f0476a8), numpy 1.24.2, Debian's python3:

    PYTHONPATH=/path/to/Gymnasium python3 examples/es/gym_ref.py --gymnasium

Gymnasium's observations are float32 (this transcription's, and the C
code's, double); the check compares its float64 internal state, and its
float32 observations to the transcription rounded to float32. All 438
values were identical (not merely close).
"""
import math
import sys

# --- CartPole-v1: constants and equations as published by Gymnasium --------
GRAVITY = 9.8
MASSCART = 1.0
MASSPOLE = 0.1
TOTAL_MASS = MASSPOLE + MASSCART
LENGTH = 0.5  # half the pole's length
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4


def cartpole_step(state, action):
    x, x_dot, theta, theta_dot = state
    force = FORCE_MAG if action == 1 else -FORCE_MAG
    costheta = math.cos(theta)
    sintheta = math.sin(theta)
    temp = (force + POLEMASS_LENGTH * theta_dot**2 * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASSPOLE * costheta**2 / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    # kinematics_integrator == "euler"
    x = x + TAU * x_dot
    x_dot = x_dot + TAU * xacc
    theta = theta + TAU * theta_dot
    theta_dot = theta_dot + TAU * thetaacc
    terminated = (x < -X_THRESHOLD or x > X_THRESHOLD
                  or theta < -THETA_THRESHOLD or theta > THETA_THRESHOLD)
    return (x, x_dot, theta, theta_dot), 1.0, terminated


# --- Pendulum-v1 ---------------------------------------------------------------
MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
G = 10.0
M = 1.0
L = 1.0


def angle_normalize(x):
    # Python's float % takes the sign of the divisor, like numpy's.
    return ((x + math.pi) % (2 * math.pi)) - math.pi


def clip(v, lo, hi):
    return min(max(v, lo), hi)


def pendulum_step(state, u):
    th, thdot = state
    u = clip(u, -MAX_TORQUE, MAX_TORQUE)
    costs = angle_normalize(th)**2 + 0.1 * thdot**2 + 0.001 * (u**2)
    newthdot = thdot + (3 * G / (2 * L) * math.sin(th) + 3.0 / (M * L**2) * u) * DT
    newthdot = clip(newthdot, -MAX_SPEED, MAX_SPEED)
    newth = th + newthdot * DT
    return (newth, newthdot), -costs


def row(vals):
    return "{" + ", ".join(v if isinstance(v, str) else repr(float(v)) for v in vals) + "},"


CARTPOLE_START = (0.01, -0.02, 0.03, 0.04)
CARTPOLE_PATTERN = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0]
PENDULUM_RUNS = [
    # starts fast near the top so that the velocity clips at 8 and the
    # angle passes pi (angle_normalize wraps); torques outside [-2, 2] are
    # clipped
    ((2.9, 7.7), [2.0, 3.5, -0.7, 1.9, -2.0, -9.0, 0.0, 0.3, 1.2, -1.5,
                  2.0, 2.0, -2.0, -2.0, 0.5, -0.25, 1.0, -1.0, 0.0, 0.05]),
    # from a large unwrapped angle (the state is never wrapped, only the
    # cost's angle is)
    ((-8.0, -7.95), [-2.0, -2.5, 0.0, 1.0, 2.0, -0.5]),
]


def cartpole_actions(t):
    """12 steps of a fixed pattern, then push right until the pole falls
    (to the left: theta < -12 degrees terminates the episode)."""
    return CARTPOLE_PATTERN[t] if t < len(CARTPOLE_PATTERN) else 1


def cartpole_rows():
    s, t, rows = CARTPOLE_START, 0, []
    while True:
        a = cartpole_actions(t)
        s, r, done = cartpole_step(s, a)
        rows.append((a, s, r, done))
        t += 1
        if done:
            return rows


def pendulum_rows(start, torques):
    s, rows = start, []
    for u in torques:
        s, r = pendulum_step(s, u)
        rows.append((u, s, (math.cos(s[0]), math.sin(s[0])), r))
    return rows


def main():
    print("/* cartpole from", CARTPOLE_START, "*/")
    rows = cartpole_rows()
    for a, s, r, done in rows:
        print(row([str(a), *s, r, "1" if done else "0"]))
    print("/* %d steps */" % len(rows))
    for start, torques in PENDULUM_RUNS:
        print("/* pendulum from", start, "*/")
        for u, s, cs, r in pendulum_rows(start, torques):
            print(row([repr(u), *s, *cs, r]))


def check_gymnasium():
    """Gymnasium's own classes against this transcription."""
    import numpy as np
    import gymnasium
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv
    from gymnasium.envs.classic_control.pendulum import PendulumEnv

    bad, n = 0, 0

    def same(what, got, want, tol=0.0):
        nonlocal bad, n
        n += 1
        if not abs(float(got) - float(want)) <= tol * max(1.0, abs(float(want))):
            bad += 1
            print("DIFFERS %s: gymnasium %r, transcription %r" % (what, got, want))

    def f32(v):
        return float(np.float32(v))

    env = CartPoleEnv()
    env.reset(seed=0)
    env.state = np.array(CARTPOLE_START, dtype=np.float64)
    for t, (a, s, r, done) in enumerate(cartpole_rows()):
        obs, gr, term, trunc, _ = env.step(a)
        for i in range(4):
            same("cartpole step %d state[%d]" % (t + 1, i), env.state[i], s[i])
            same("cartpole step %d obs[%d]" % (t + 1, i), obs[i], f32(s[i]))
        same("cartpole step %d reward" % (t + 1), gr, r)
        same("cartpole step %d terminated" % (t + 1), term, done)
        same("cartpole step %d truncated" % (t + 1), trunc, False)

    for k, (start, torques) in enumerate(PENDULUM_RUNS):
        env = PendulumEnv()
        env.reset(seed=0)
        env.state = np.array(start, dtype=np.float64)
        for t, (u, s, cs, r) in enumerate(pendulum_rows(start, torques)):
            obs, gr, term, trunc, _ = env.step(np.array([u]))
            what = "pendulum %d step %d" % (k + 1, t + 1)
            same(what + " th", env.state[0], s[0])
            same(what + " thdot", env.state[1], s[1])
            same(what + " obs cos", obs[0], f32(cs[0]))
            same(what + " obs sin", obs[1], f32(cs[1]))
            same(what + " obs thdot", obs[2], f32(s[1]))
            same(what + " reward", gr, r)
            same(what + " terminated", term, False)

    c, p = gymnasium.spec("CartPole-v1"), gymnasium.spec("Pendulum-v1")
    same("CartPole-v1 max_episode_steps", c.max_episode_steps, 500)
    same("CartPole-v1 reward_threshold", c.reward_threshold, 475.0)
    same("Pendulum-v1 max_episode_steps", p.max_episode_steps, 200)
    print("Gymnasium %s, numpy %s: %d of %d values agree"
          % (gymnasium.__version__, np.__version__, n - bad, n))
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--gymnasium"]:
        sys.exit(check_gymnasium())
    main()
