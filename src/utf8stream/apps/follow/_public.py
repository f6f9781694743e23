"""``public``: a class made to name the public module it is imported from."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["public"]

T = TypeVar("T", bound=type)


def public(home: str) -> Callable[[T], T]:
    """A class decorator (outermost: after ``dataclass``, which reads the module the class
    is defined in): the class names ``home``, the public module that exports it, as its
    module, so that its ``repr``, its documentation and its pickles name no private
    module (a pickle names the class by its module and name)."""

    def decorate(cls: T) -> T:
        cls.__module__ = home
        return cls

    return decorate
