"""The airline tools on a small synthetic database: every rule accepted once and refused once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ace_eval.benchmarks.tau_bench.data import AirlineData, Task
from ace_eval.benchmarks.tau_bench.env import AirlineEnv
from ace_eval.benchmarks.tau_bench.hashing import hash_data


def _day(status: str = "available", seats: int = 5, price: int = 100) -> dict[str, Any]:
    return {
        "status": status,
        "available_seats": {"basic_economy": seats, "economy": seats, "business": seats},
        "prices": {"basic_economy": price // 2, "economy": price, "business": price * 3},
    }


def _flight(number: str, origin: str, destination: str, dep: str, arr: str, **dates: dict[str, Any]) -> dict[str, Any]:
    return {
        "flight_number": number,
        "origin": origin,
        "destination": destination,
        "scheduled_departure_time_est": dep,
        "scheduled_arrival_time_est": arr,
        "dates": {f"2024-05-{day[1:]}": value for day, value in dates.items()},
    }


def tiny_data() -> AirlineData:
    """Four flights, one user with every kind of payment method, one reservation."""
    flights = {
        f["flight_number"]: f
        for f in (
            _flight("HAT001", "JFK", "SEA", "08:00:00", "12:00:00", d20=_day(), d21=_day("delayed")),
            _flight("HAT002", "SEA", "LAX", "13:00:00", "15:00:00", d20=_day(price=80), d21=_day(price=90)),
            _flight("HAT003", "JFK", "SEA", "18:00:00", "22:00:00", d20=_day(price=60, seats=1)),
            _flight("HAT004", "JFK", "SEA", "22:00:00", "01:00:00+1", d20=_day(price=70)),
        )
    }
    flights["HAT002"]["dates"]["2024-05-21"]["available_seats"]["economy"] = 0
    users = {
        "ann_1": {
            "name": {"first_name": "Ann", "last_name": "Lee"},
            "payment_methods": {
                "credit_card_1": {"source": "credit_card", "brand": "visa", "last_four": "1111", "id": "credit_card_1"},
                "gift_card_1": {"source": "gift_card", "amount": 150, "id": "gift_card_1"},
                "certificate_1": {"source": "certificate", "amount": 100, "id": "certificate_1"},
            },
            "membership": "silver",
            "reservations": ["RES001"],
        }
    }
    reservations = {
        "RES001": {
            "reservation_id": "RES001",
            "user_id": "ann_1",
            "origin": "JFK",
            "destination": "SEA",
            "flight_type": "one_way",
            "cabin": "economy",
            "flights": [
                {"origin": "JFK", "destination": "SEA", "flight_number": "HAT001", "date": "2024-05-20", "price": 90}
            ],
            "passengers": [
                {"first_name": "Ann", "last_name": "Lee", "dob": "1990-01-01"},
                {"first_name": "Bo", "last_name": "Lee", "dob": "1992-01-01"},
            ],
            "payment_history": [{"payment_id": "credit_card_1", "amount": 180}],
            "created_at": "2024-05-10T10:00:00",
            "total_baggages": 1,
            "nonfree_baggages": 0,
            "insurance": "no",
        }
    }
    task = Task(user_id="ann_1", instruction="Book a flight.", actions=[])
    return AirlineData(flights=flights, reservations=reservations, users=users, wiki="Policy.", tasks=(task,))


@pytest.fixture
def env() -> AirlineEnv:
    data = tiny_data()
    return AirlineEnv(data, data.tasks[0])


def _booking(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "user_id": "ann_1",
        "origin": "JFK",
        "destination": "LAX",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [
            {"flight_number": "HAT001", "date": "2024-05-20"},
            {"flight_number": "HAT002", "date": "2024-05-20"},
        ],
        "passengers": [{"first_name": "Ann", "last_name": "Lee", "dob": "1990-01-01"}],
        "payment_methods": [
            {"payment_id": "certificate_1", "amount": 100},
            {"payment_id": "gift_card_1", "amount": 140},
        ],
        "total_baggages": 2,
        "nonfree_baggages": 1,
        "insurance": "yes",
    }
    return {**kwargs, **overrides}


def _unchanged(env: AirlineEnv) -> bool:
    fresh = AirlineEnv(env.data, env.task)
    return env.data_hash() == fresh.data_hash()


def test_booking_prices_flights_insurance_and_bags_and_charges_each_method(env: AirlineEnv) -> None:
    # 100 + 80 per passenger, 30 insurance, 50 for the one paid bag = 260
    out = json.loads(
        env.step(
            "book_reservation",
            _booking(
                payment_methods=[
                    {"payment_id": "certificate_1", "amount": 100},
                    {"payment_id": "gift_card_1", "amount": 150},
                    {"payment_id": "credit_card_1", "amount": 10},
                ]
            ),
        )
    )
    assert out["reservation_id"] == "HATHAT"
    assert [f["price"] for f in out["flights"]] == [100, 80]
    assert out["flights"][1] == {
        "flight_number": "HAT002",
        "date": "2024-05-20",
        "price": 80,
        "origin": "SEA",
        "destination": "LAX",
    }
    user = env.db.users["ann_1"]
    assert "certificate_1" not in user["payment_methods"]  # a certificate is consumed whole
    assert user["payment_methods"]["gift_card_1"]["amount"] == 0
    assert user["reservations"] == ["RES001", "HATHAT"]
    assert env.db.reservations["HATHAT"]["created_at"] == "2024-05-15T15:00:00"
    assert env.db.flights["HAT001"]["dates"]["2024-05-20"]["available_seats"]["economy"] == 5  # seats untouched


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"user_id": "nobody"}, "Error: user not found"),
        ({"flights": [{"flight_number": "HAT999", "date": "2024-05-20"}]}, "Error: flight HAT999 not found"),
        (
            {"flights": [{"flight_number": "HAT003", "date": "2024-05-21"}]},
            "Error: flight HAT003 not found on date 2024-05-21",
        ),
        (
            {"flights": [{"flight_number": "HAT001", "date": "2024-05-21"}]},
            "Error: flight HAT001 not available on date 2024-05-21",
        ),
        ({"flights": [{"flight_number": "HAT002", "date": "2024-05-21"}]}, "Error: not enough seats on flight HAT002"),
        (
            {"payment_methods": [{"payment_id": "gift_card_9", "amount": 260}]},
            "Error: payment method gift_card_9 not found",
        ),
        (
            {"payment_methods": [{"payment_id": "certificate_1", "amount": 260}]},
            "Error: not enough balance in payment method certificate_1",
        ),
        (
            {"payment_methods": [{"payment_id": "gift_card_1", "amount": 151}]},
            "Error: not enough balance in payment method gift_card_1",
        ),
        (
            {"payment_methods": [{"payment_id": "credit_card_1", "amount": 250}]},
            "Error: payment amount does not add up, total price is 260, but paid 250",
        ),
    ],
)
def test_booking_refusals_return_upstream_errors_and_change_nothing(
    env: AirlineEnv, overrides: dict[str, Any], error: str
) -> None:
    assert env.step("book_reservation", _booking(**overrides)) == error
    assert _unchanged(env)


def test_new_reservation_ids_follow_upstream_and_a_fourth_overwrites_the_third(env: AirlineEnv) -> None:
    cheap = _booking(
        flights=[{"flight_number": "HAT002", "date": "2024-05-20"}],
        payment_methods=[{"payment_id": "credit_card_1", "amount": 80}],
        nonfree_baggages=0,
        insurance="no",
    )
    ids = [json.loads(env.step("book_reservation", cheap))["reservation_id"] for _ in range(4)]
    assert ids == ["HATHAT", "HATHAU", "HATHAV", "HATHAV"]
    assert env.db.users["ann_1"]["reservations"][1:] == ids


def test_cancel_refunds_every_payment_and_marks_the_reservation(env: AirlineEnv) -> None:
    out = json.loads(env.step("cancel_reservation", {"reservation_id": "RES001"}))
    assert out["status"] == "cancelled"
    assert out["payment_history"] == [
        {"payment_id": "credit_card_1", "amount": 180},
        {"payment_id": "credit_card_1", "amount": -180},
    ]
    assert env.step("cancel_reservation", {"reservation_id": "NOPE00"}) == "Error: reservation not found"


def test_flight_change_charges_the_difference_and_keeps_old_prices_of_kept_segments(env: AirlineEnv) -> None:
    kept_and_new = [
        {"flight_number": "HAT001", "date": "2024-05-20"},
        {"flight_number": "HAT002", "date": "2024-05-20"},
    ]
    out = json.loads(
        env.step(
            "update_reservation_flights",
            {
                "reservation_id": "RES001",
                "cabin": "economy",
                "flights": kept_and_new,
                "payment_id": "credit_card_1",
            },
        )
    )
    assert [f["price"] for f in out["flights"]] == [90, 80]  # HAT001 kept at 90, not today's 100
    assert out["payment_history"][-1] == {"payment_id": "credit_card_1", "amount": 160}  # 2 passengers x 80
    assert env.db.users["ann_1"]["payment_methods"]["gift_card_1"]["amount"] == 150  # a card is not debited


def test_cheaper_flight_change_credits_the_gift_card(env: AirlineEnv) -> None:
    # HAT004 costs 70 instead of 90: 2 x -20 goes back to the gift card
    env.step(
        "update_reservation_flights",
        {
            "reservation_id": "RES001",
            "cabin": "economy",
            "flights": [{"flight_number": "HAT004", "date": "2024-05-20"}],
            "payment_id": "gift_card_1",
        },
    )
    assert env.db.users["ann_1"]["payment_methods"]["gift_card_1"]["amount"] == 190
    assert env.db.reservations["RES001"]["payment_history"][-1] == {"payment_id": "gift_card_1", "amount": -40}


@pytest.mark.parametrize(
    ("cabin", "flight", "payment_id", "error"),
    [
        ("economy", "HAT001", "certificate_1", "Error: certificate cannot be used to update reservation"),
        ("business", "HAT001", "gift_card_1", "Error: gift card balance is not enough"),  # 2 x (300 - 90)
        ("economy", "HAT001", "credit_card_9", "Error: payment method not found"),
        ("economy", "HAT003", "credit_card_1", "Error: not enough seats on flight HAT003"),
    ],
)
def test_flight_change_refusals(env: AirlineEnv, cabin: str, flight: str, payment_id: str, error: str) -> None:
    kwargs = {
        "reservation_id": "RES001",
        "cabin": cabin,
        "flights": [{"flight_number": flight, "date": "2024-05-20"}],
        "payment_id": payment_id,
    }
    assert env.step("update_reservation_flights", kwargs) == error
    assert _unchanged(env)


def test_unchanged_flights_and_cabin_record_no_payment(env: AirlineEnv) -> None:
    out = json.loads(
        env.step(
            "update_reservation_flights",
            {
                "reservation_id": "RES001",
                "cabin": "economy",
                "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}],
                "payment_id": "credit_card_1",
            },
        )
    )
    assert len(out["payment_history"]) == 1


def test_baggage_fee_is_50_per_added_paid_bag(env: AirlineEnv) -> None:
    out = json.loads(
        env.step(
            "update_reservation_baggages",
            {
                "reservation_id": "RES001",
                "total_baggages": 4,
                "nonfree_baggages": 2,
                "payment_id": "gift_card_1",
            },
        )
    )
    assert out["payment_history"][-1] == {"payment_id": "gift_card_1", "amount": 100}
    assert env.db.users["ann_1"]["payment_methods"]["gift_card_1"]["amount"] == 50
    # adding free bags only costs nothing and records no payment
    out = json.loads(
        env.step(
            "update_reservation_baggages",
            {
                "reservation_id": "RES001",
                "total_baggages": 5,
                "nonfree_baggages": 2,
                "payment_id": "credit_card_1",
            },
        )
    )
    assert len(out["payment_history"]) == 2
    refused = env.step(
        "update_reservation_baggages",
        {
            "reservation_id": "RES001",
            "total_baggages": 6,
            "nonfree_baggages": 3,
            "payment_id": "certificate_1",
        },
    )
    assert refused == "Error: certificate cannot be used to update reservation"


def test_passengers_can_change_but_not_their_number(env: AirlineEnv) -> None:
    two = [{"first_name": "Cy", "last_name": "Lee", "dob": "2000-01-01"}] * 2
    assert (
        json.loads(env.step("update_reservation_passengers", {"reservation_id": "RES001", "passengers": two}))[
            "passengers"
        ]
        == two
    )
    one = two[:1]
    assert env.step("update_reservation_passengers", {"reservation_id": "RES001", "passengers": one}) == (
        "Error: number of passengers does not match"
    )


def test_lookups_and_their_upstream_error_strings(env: AirlineEnv) -> None:
    assert json.loads(env.step("get_user_details", {"user_id": "ann_1"}))["membership"] == "silver"
    assert env.step("get_user_details", {"user_id": "bob"}) == "Error: user not found"
    assert json.loads(env.step("get_reservation_details", {"reservation_id": "RES001"}))["cabin"] == "economy"
    assert env.step("get_reservation_details", {"reservation_id": "NOPE00"}) == "Error: user not found"
    assert json.loads(env.step("list_all_airports", {}))["LGA"] == "LaGuardia"


def test_direct_search_lists_only_bookable_flights_with_that_days_data(env: AirlineEnv) -> None:
    found = json.loads(env.step("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}))
    assert [f["flight_number"] for f in found] == ["HAT001", "HAT003", "HAT004"]
    assert "dates" not in found[0] and found[0]["prices"]["economy"] == 100 and found[0]["status"] == "available"
    delayed = json.loads(
        env.step("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-21"})
    )
    assert delayed == []


def test_onestop_search_connects_overnight_legs_next_day_with_upstreams_price_quirk(env: AirlineEnv) -> None:
    found = json.loads(env.step("search_onestop_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"}))
    pairs = [(a["flight_number"], b["flight_number"], b["date"]) for a, b in found]
    # HAT003 lands 22:00, after HAT002 leaves: no connection; HAT004 lands "01:00:00+1": next day's HAT002
    assert pairs == [("HAT001", "HAT002", "2024-05-20"), ("HAT004", "HAT002", "2024-05-21")]
    overnight = found[1][1]
    assert overnight["prices"]["economy"] == 80  # read on the first leg's date, as upstream does (21st costs 90)


def test_certificates_get_upstreams_three_ids_then_nothing(env: AirlineEnv) -> None:
    outs = [env.step("send_certificate", {"user_id": "ann_1", "amount": 150}) for _ in range(4)]
    assert outs[:3] == [
        f"Certificate certificate_{n} added to user ann_1 with amount 150." for n in (3221322, 3221323, 3221324)
    ]
    assert outs[3] == ""  # upstream returns None here
    assert env.db.users["ann_1"]["payment_methods"]["certificate_3221322"] == {
        "source": "certificate",
        "amount": 150,
        "id": "certificate_3221322",
    }
    assert env.step("send_certificate", {"user_id": "bob", "amount": 1}) == "Error: user not found"


def test_a_raising_tool_call_becomes_an_error_string_and_unknown_tools_are_named(env: AirlineEnv) -> None:
    assert env.step("book_reservation", _booking(flights=[{"date": "2024-05-20"}])) == "Error: 'flight_number'"
    assert env.step("get_user_details", {}).startswith("Error: ") and "user_id" in env.step("get_user_details", {})
    assert env.step("fly_me_to_the_moon", {}) == "Unknown action fly_me_to_the_moon"
    assert env.step("think", {"thought": "hmm"}) == ""
    assert not env.done
    assert env.step("transfer_to_human_agents", {"summary": "help"}) == "Transfer successful"
    assert env.ended == "transfer"  # the episode is over


def test_episodes_never_touch_the_shared_tables_and_store_private_copies_of_arguments(env: AirlineEnv) -> None:
    before = hash_data({"flights": env.data.flights, "reservations": env.data.reservations, "users": env.data.users})
    payments = [{"payment_id": "credit_card_1", "amount": 80}]
    cheap = _booking(
        flights=[{"flight_number": "HAT002", "date": "2024-05-20"}],
        payment_methods=payments,
        nonfree_baggages=0,
        insurance="no",
    )
    env.step("book_reservation", cheap)
    env.step("cancel_reservation", {"reservation_id": "HATHAT"})
    env.step("cancel_reservation", {"reservation_id": "RES001"})
    env.step("send_certificate", {"user_id": "ann_1", "amount": 5})
    assert payments == [{"payment_id": "credit_card_1", "amount": 80}]  # the caller's list was not extended
    after = hash_data({"flights": env.data.flights, "reservations": env.data.reservations, "users": env.data.users})
    assert before == after
    assert env.db.changed_keys() == {"flights": [], "reservations": ["RES001", "HATHAT"], "users": ["ann_1"]}
