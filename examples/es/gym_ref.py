#!/usr/bin/env python3
"""gym_ref - reference trajectories for t/7001-es-env.c.

Implements, in plain Python floats (IEEE double), the step equations that
Gymnasium publishes for CartPole-v1 (gymnasium/envs/classic_control/
cartpole.py) and Pendulum-v1 (.../pendulum.py), and prints C array rows
that the test compares the C environments against. It does not import the
C code or Gymnasium (which is not installable here): it is an independent
transcription of the published equations, run once by hand:

    python3 examples/es/gym_ref.py > /tmp/ref.txt

Each row is the action, then what the step returns: for CartPole the state
(= observation) x, x_dot, theta, theta_dot, the reward and the terminated
flag; for Pendulum the state th, thdot, the observation's cos(th), sin(th)
(its third element is thdot) and the reward.
"""
import math

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


def main():
    # CartPole: 12 steps of a fixed pattern, then push right until the pole
    # falls (to the left: theta < -12 degrees terminates the episode).
    s = (0.01, -0.02, 0.03, 0.04)
    print("/* cartpole from", s, "*/")
    pattern = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0]
    t = 0
    while True:
        a = pattern[t] if t < len(pattern) else 1
        s, r, done = cartpole_step(s, a)
        print(row([str(a), *s, r, "1" if done else "0"]))
        t += 1
        if done:
            break
    print("/* %d steps */" % t)

    # Pendulum: starts fast near the top so that the velocity clips at 8 and
    # the angle passes pi (angle_normalize wraps); torques outside [-2, 2]
    # are clipped.
    s = (2.9, 7.7)
    print("/* pendulum from", s, "*/")
    torques = [2.0, 3.5, -0.7, 1.9, -2.0, -9.0, 0.0, 0.3, 1.2, -1.5,
               2.0, 2.0, -2.0, -2.0, 0.5, -0.25, 1.0, -1.0, 0.0, 0.05]
    for u in torques:
        s, r = pendulum_step(s, u)
        print(row([repr(u), *s, math.cos(s[0]), math.sin(s[0]), r]))

    # And one from a large unwrapped angle (the state is never wrapped, only
    # the cost's angle is).
    s = (-8.0, -7.95)
    print("/* pendulum from", s, "*/")
    for u in [-2.0, -2.5, 0.0, 1.0, 2.0, -0.5]:
        s, r = pendulum_step(s, u)
        print(row([repr(u), *s, math.cos(s[0]), math.sin(s[0]), r]))


if __name__ == "__main__":
    main()
