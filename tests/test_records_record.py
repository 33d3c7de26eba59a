"""records.record gives a class what @dataclass(frozen=True, slots=True) gave it: checked for every
@record class of fscontrol against a real frozen dataclass of the same fields (made by the
dataclasses module from the class's own __dataclass_fields__), on the same values."""

import copy
import dataclasses
import importlib
import pickle
import pkgutil

import pytest

import fscontrol
from fscontrol import records


def _record_classes() -> list[type]:
    found = {}
    for info in pkgutil.walk_packages(fscontrol.__path__, "fscontrol."):
        if info.name.startswith(("fscontrol.web", "fscontrol.__main__")):
            continue
        mod = importlib.import_module(info.name)
        for obj in vars(mod).values():
            if isinstance(obj, type) and obj.__dict__.get("__reduce__") is records._reduce:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


CLASSES = _record_classes()


def _values(cls: type, salt: int) -> list:
    # one distinct, hashable value a field (what the fields hold does not matter to the methods)
    return [f"{name}-{salt}" if i % 2 else (i + 1) * 10 + salt for i, name in enumerate(cls.__slots__)]


def _twin(cls: type) -> type:
    specs = [(f.name, f.type, dataclasses.field(default=f.default, compare=f.compare, repr=f.repr))
             for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True)


def test_every_converted_module_has_its_records():
    names = {c.__name__ for c in CLASSES}
    assert len(CLASSES) >= 30 and {"ShareRow", "Snapshot", "SlurmConfig", "Decision", "Action", "AgentConfig",
                                   "StoredSnapshot", "TickResult", "AssocFairTree", "Segment"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_record_behaves_as_its_frozen_dataclass(cls):
    twin = _twin(cls)
    a, b, a2 = cls(*_values(cls, 1)), cls(*_values(cls, 2)), cls(*_values(cls, 1))
    ta, tb = twin(*_values(cls, 1)), twin(*_values(cls, 2))
    assert repr(a) == repr(ta) and repr(b) == repr(tb)
    assert (a == a2, a == b, a != b) == (ta == twin(*_values(cls, 1)), ta == tb, ta != tb) == (True, False, True)
    assert a.__eq__(ta) is NotImplemented and a != ta  # another class is never equal, as for dataclasses
    not_compared = [f.name for f in dataclasses.fields(cls) if not f.compare]
    if not not_compared:
        assert hash(a) == hash(ta) == hash(a2)
    else:  # a field left out of equality and hash: changing it changes neither
        other = dataclasses.replace(a, **{not_compared[0]: "other"})
        assert other == a and hash(other) == hash(a)
    for obj in (a, b):
        assert pickle.loads(pickle.dumps(obj)) == obj and copy.deepcopy(obj) == obj and copy.copy(obj) == obj
    name = cls.__slots__[-1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(a, name, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(a, name)
    assert not hasattr(a, "__dict__")
    changed = dataclasses.replace(a, **{name: "x"})
    assert type(changed) is cls and getattr(changed, name) == "x" and records.replace(a, **{name: "x"}) == changed
    assert dataclasses.asdict(a) == dataclasses.asdict(ta) and dataclasses.astuple(a) == dataclasses.astuple(ta)
    assert cls.__match_args__ == twin.__match_args__
    with pytest.raises(TypeError):
        records.replace(a, no_such_field=1)
