"""Shared fixtures of the Python suite: where the build and the zoo are, one device context with
the validation layer on (when RFA_VALIDATION=1, as under CTest), and a check after every test that
the layer stayed silent."""
import os
import subprocess

import numpy as np
import pytest

import rfa

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("RFA_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("RFA_BUILD_DIR") or os.path.join(SOURCE, "build")
MODELS = os.path.join(SOURCE, "models")


def model_dir(name):
    return os.path.join(MODELS, name)


@pytest.fixture(scope="session")
def ctx():
    return rfa.Context()


@pytest.fixture(autouse=True)
def validation_stays_silent(ctx):
    before = ctx.validation_messages
    yield
    assert ctx.validation_messages == before, "the Vulkan validation layer reported %d message(s)" % (
        ctx.validation_messages - before)


@pytest.fixture(scope="session")
def spiral():
    return rfa.load_model(model_dir("spiral-filter"))


@pytest.fixture(scope="session")
def char_lm():
    return rfa.load_model(model_dir("tiny-char-lm"))


def golden(model, name):
    return np.load(os.path.join(model_dir(model), "golden", name + ".npy"))


def rfa_run(*args):
    """Runs build/rfa-run; returns the CompletedProcess (text)."""
    exe = os.path.join(BUILD, "rfa-run")
    if not os.path.exists(exe):
        pytest.skip("no rfa-run in %s (RFA_BUILD_DIR)" % BUILD)
    return subprocess.run([exe] + list(args), capture_output=True, text=True)
