"""One record base: a dataclass's recorded form (`record()`, plain JSON) and its inverse (`from_record()`).

Every record of a pass (the manifest's sections, the settings, the verdict and its checks, the protocol's sections)
derives from `Record`, as every optimum-benchmark record derives from its mixin: the recorded form is the fields in
declaration order, nested records, tuples and mappings made plain; reading it back types each nested record again by
the field's annotation, a key the record does not know is ignored and a field it lacks takes its default, so records
written before a field existed read back the same. `SPARSE` names the fields left out while at their default,
`RENAMED` the fields (or `DERIVED` properties) recorded under another key, `DERIVED` the properties recorded after the
fields for a reader without this code, and computed again, never read, on the way back; `OPEN` names the one mapping
field holding the keys a record does not name (an environment's own facts), recorded beside the fields. Pure: no torch,
no mlflow.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """A dataclass with one recorded form and its inverse (subclasses are `@dataclass(frozen=True)`)."""

    SPARSE: ClassVar[tuple[str, ...]] = ()  # fields left out of the record while at their default
    RENAMED: ClassVar[Mapping[str, str]] = {}  # field -> the key the record holds it under
    DERIVED: ClassVar[tuple[str, ...]] = ()  # properties recorded after the fields
    OPEN: ClassVar[str] = ""  # the mapping field whose keys are recorded beside the fields

    def record(self) -> dict[str, Any]:
        """The recorded form: every field in declaration order (those in `SPARSE` only away from their default),
        then the `DERIVED` properties, then the `OPEN` field's keys."""
        names = [f.name for f in dataclasses.fields(self) if not self.omitted(f) and f.name != self.OPEN]
        found = {self.RENAMED.get(name, name): plain(getattr(self, name)) for name in names + list(self.DERIVED)}
        return {**found, **plain(getattr(self, self.OPEN))} if self.OPEN else found

    def omitted(self, field: dataclasses.Field) -> bool:
        """Whether the field is left out of the record: a `SPARSE` field at its default."""
        return field.name in self.SPARSE and getattr(self, field.name) == default(field)

    @classmethod
    def from_record(cls: type[R], record: Mapping) -> R:  # noqa: PYI019 - typing.Self is 3.11+; 3.10 is supported
        """The record back from its recorded form: nested records typed by their fields' annotations."""
        hints = annotations(cls)
        values = {}
        for f in dataclasses.fields(cls):
            key = cls.RENAMED.get(f.name, f.name)
            if f.init and key in record and f.name != cls.OPEN:
                values[f.name] = typed(hints.get(f.name), record[key])
        if cls.OPEN:
            named = {cls.RENAMED.get(f.name, f.name) for f in dataclasses.fields(cls)} | set(cls.DERIVED)
            values[cls.OPEN] = {key: value for key, value in record.items() if key not in named}
        return cls(**values)


class Keyed(Mapping):
    """Read-only key access to a record's recorded form (`plan["start"]`, `stack.get("driver", "")`), for readers
    still written against the dict the record replaced; new code reads attributes."""

    def __getitem__(self, key: str) -> Any:
        return self.record()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.record())

    def __len__(self) -> int:
        return len(self.record())


def default(field: dataclasses.Field) -> Any:
    """A field's default value (its factory's value); `dataclasses.MISSING` when it has none."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def plain(value: Any) -> Any:
    """A value as JSON holds it: a record by its recorded form, tuples as lists, mappings as dicts."""
    if isinstance(value, Record):
        return value.record()
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


@cache
def annotations(cls: type) -> dict[str, Any]:
    """A record's fields' types, resolved once; {} where an annotation names what its module cannot resolve."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        return {}


def typed(hint: Any, value: Any) -> Any:
    """A recorded value read back as its field's type: a nested record (or an optional one), a tuple of them, a
    tuple; anything else as it is."""
    if value is None or hint is None:
        return value
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if arg is not type(None) and (isinstance(arg, type) and issubclass(arg, Record) or typing.get_origin(arg)):
                return typed(arg, value)
        return value
    if isinstance(hint, type) and issubclass(hint, Record):
        return value if isinstance(value, hint) or not isinstance(value, Mapping) else hint.from_record(value)
    if origin is tuple and isinstance(value, (list, tuple)):
        args = typing.get_args(hint)
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else None
        return tuple(typed(item, element) for element in value)
    return value
