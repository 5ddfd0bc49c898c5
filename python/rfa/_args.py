"""Checking the package's arguments before they reach the C API: every bad argument raises
rfa.Error with INVALID_ARGUMENT and a message naming the argument, never a TypeError, a
ValueError, an OverflowError or a silently wrapped number."""
import ctypes
import functools
import math
import numbers

import numpy as np

from . import _lib

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


def bad(message):
    return _lib.Error(_lib.INVALID_ARGUMENT, "invalid_argument: " + message)


def integer(v, what, lo=INT_MIN, hi=INT_MAX):
    """v as a Python int in [lo, hi] (C int by default); bools and non-integral numbers refused."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
        raise bad("%s must be an integer, got %r" % (what, v))
    v = int(v)  # exact for numpy's uint64 too
    if not lo <= v <= hi:
        raise bad("%s is %d, outside [%d, %d]" % (what, v, lo, hi))
    return v


def number(v, what, lo=-math.inf, hi=math.inf, lo_open=False):
    """v as a finite float in [lo, hi] (or (lo, hi] with lo_open)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
        raise bad("%s must be a number, got %r" % (what, v))
    f = float(v)
    if not math.isfinite(f) or f > hi or f < lo or (lo_open and f == lo):
        raise bad("%s is %r, outside %s%s, %s]" % (what, v, "(" if lo_open else "[", lo, hi))
    return f


def span(r, what, default):
    """A (lo, hi) range of positions, or `default` when r is None."""
    if r is None:
        return default
    try:
        lo, hi = r
    except (TypeError, ValueError):
        raise bad("%s must be a (first, end) pair of positions, got %r" % (what, r)) from None
    lo, hi = integer(lo, what + "[0]"), integer(hi, what + "[1]")
    if not 0 <= lo < hi:
        raise bad("%s: (%d, %d) is not a non-empty range of positions" % (what, lo, hi))
    return lo, hi


def array(v, what, dtype=None):
    """np.asarray(v, dtype) with numpy's own refusals turned into rfa.Error."""
    try:
        return np.asarray(v, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise bad("%s: %s" % (what, e)) from None


def checked(f):
    """Turns a TypeError, ValueError or OverflowError a public call raises on its arguments (an
    unexpected keyword, a wrong count of arguments, a conversion) into rfa.Error."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except (TypeError, ValueError, OverflowError, ctypes.ArgumentError) as e:
            raise bad("%s: %s" % (f.__qualname__, e)) from None
    return wrapper
