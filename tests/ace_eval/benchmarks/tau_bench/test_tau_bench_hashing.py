"""The database hash: upstream's definition, and the fast incremental one that must always agree with it."""

from __future__ import annotations

import hashlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_tau_bench_tools import tiny_data

from ace_eval.benchmarks.tau_bench.data import AirlineData
from ace_eval.benchmarks.tau_bench.env import AirlineEnv
from ace_eval.benchmarks.tau_bench.hashing import consistent_hash, data_hash, hash_data, to_hashable


def test_to_hashable_sorts_dict_items_and_turns_lists_and_sets_into_tuples() -> None:
    assert to_hashable({"b": [1, {"d": 2, "c": 3}], "a": {3, 1}}) == (
        ("a", (1, 3)),
        ("b", (1, (("c", 3), ("d", 2)))),
    )
    assert to_hashable("x") == "x"
    assert to_hashable([]) == ()


def test_consistent_hash_is_sha256_of_str() -> None:
    value = (("a", 1), ("b", (1.5, None, True)))
    assert consistent_hash(value) == hashlib.sha256(str(value).encode("utf-8")).hexdigest()
    assert consistent_hash((("a", 1),)) != consistent_hash((("a", 1.0),))  # 1 and 1.0 print differently


def _naive(env: AirlineEnv) -> str:
    return hash_data(env.db.as_data())


def test_fast_hash_equals_the_definition_for_fresh_mutated_and_odd_sized_tables() -> None:
    data = tiny_data()
    env = AirlineEnv(data, data.tasks[0])
    assert data_hash(env.db) == _naive(env)  # a one-entry table prints as "(x,)"
    env.step("cancel_reservation", {"reservation_id": "RES001"})
    assert data_hash(env.db) == _naive(env)
    env.db.reservations.clear()  # an empty table prints as "()"
    assert data_hash(env.db) == _naive(env)


_ACTIONS = st.sampled_from(
    [
        ("cancel_reservation", {"reservation_id": "RES001"}),
        ("send_certificate", {"user_id": "ann_1", "amount": 50}),
        ("send_certificate", {"user_id": "ann_1", "amount": 12.5}),
        (
            "update_reservation_baggages",
            {"reservation_id": "RES001", "total_baggages": 3, "nonfree_baggages": 1, "payment_id": "gift_card_1"},
        ),
        (
            "update_reservation_flights",
            {
                "reservation_id": "RES001",
                "cabin": "business",
                "flights": [{"flight_number": "HAT004", "date": "2024-05-20"}],
                "payment_id": "credit_card_1",
            },
        ),
        (
            "update_reservation_passengers",
            {"reservation_id": "RES001", "passengers": [{"first_name": "Z", "last_name": "Y", "dob": "x"}] * 2},
        ),
        (
            "book_reservation",
            {
                "user_id": "ann_1",
                "origin": "SEA",
                "destination": "LAX",
                "flight_type": "one_way",
                "cabin": "economy",
                "flights": [{"flight_number": "HAT002", "date": "2024-05-20"}],
                "passengers": [{"first_name": "A", "last_name": "L", "dob": "1"}],
                "payment_methods": [{"payment_id": "credit_card_1", "amount": 80}],
                "total_baggages": 0,
                "nonfree_baggages": 0,
                "insurance": "no",
            },
        ),
        ("get_user_details", {"user_id": "ann_1"}),
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_ACTIONS, max_size=8))
def test_fast_hash_equals_the_definition_after_any_sequence_of_tool_calls(actions: list[tuple[str, Any]]) -> None:
    data = tiny_data()
    env = AirlineEnv(data, data.tasks[0])
    for name, kwargs in actions:
        env.step(name, kwargs)
        assert data_hash(env.db) == _naive(env)


def test_cached_entity_text_is_reused_only_for_untouched_originals() -> None:
    data: AirlineData = tiny_data()
    first = AirlineEnv(data, data.tasks[0])
    fresh_hash = data_hash(first.db)
    assert ("reservations", "RES001") in data.entity_bytes
    first.step("cancel_reservation", {"reservation_id": "RES001"})
    changed = data_hash(first.db)
    assert changed != fresh_hash
    second = AirlineEnv(data, data.tasks[0])
    assert data_hash(second.db) == fresh_hash  # the shared cache was not polluted by the first episode
