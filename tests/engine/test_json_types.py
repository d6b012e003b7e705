"""The JSON readers: a field of the wrong kind reads as empty (or the default), never as something else."""

from __future__ import annotations

from types import MappingProxyType

from specchat.engine.json_types import as_int, as_list, as_object, as_str, int_list, objects


def test_as_object_keeps_a_dict_itself_and_copies_another_mapping():
    body = {"a": 1}
    assert as_object(body) is body  # callers change a body's own objects in place
    assert as_object(MappingProxyType({"b": 2})) == {"b": 2}
    assert as_object([1, 2]) == {} and as_object("x") == {} and as_object(None) == {}


def test_arrays_read_lists_and_tuples_only():
    items = [1, "a"]
    assert as_list(items) is items
    assert as_list((1, 2)) == [1, 2]
    assert as_list("ab") == [] and as_list({"a": 1}) == [] and as_list(None) == []
    assert objects([{"a": 1}, 2, "x", {"b": 2}]) == [{"a": 1}, {"b": 2}]
    assert int_list([3, True, 4.5, "5", 6]) == [3, 6]


def test_scalars_fall_back_to_their_default():
    assert as_str("x") == "x" and as_str(3) == "" and as_str(None, "d") == "d"
    assert as_int(7) == 7 and as_int(7.9) == 7
    assert as_int(True, -1) == -1 and as_int("7", -1) == -1 and as_int(None) == 0
