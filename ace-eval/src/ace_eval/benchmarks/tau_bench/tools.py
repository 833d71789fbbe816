"""The 13 airline tools and `think`, with the benchmark's semantics, error strings and quirks.

Each tool takes the episode's `AirlineDB` and upstream's keyword arguments and returns the observation
the agent sees. Behaviour worth knowing (all upstream's): booking does not decrement seats; a new
reservation is `HATHAT`, then `HATHAU`, then `HATHAV` (a fourth booking overwrites `HATHAV`); a
certificate is consumed whole; gift cards are debited (and credited on a cheaper flight change);
cancelling appends negated copies of every payment; `get_reservation_details` reports a missing
reservation as "user not found"; the one-stop search reads the second leg's seats and prices on the
first leg's date. An argument of the wrong shape raises, and `AirlineEnv.step` turns the exception into
`"Error: <message>"` as upstream does.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sized
from types import MappingProxyType
from typing import Any

from ace_eval.benchmarks.tau_bench.calculator import calculate as _calculate
from ace_eval.benchmarks.tau_bench.db import AirlineDB

__all__ = ["AIRPORTS", "TERMINATING_TOOLS", "TOOLS", "ToolFunction"]

ToolFunction = Callable[..., str | None]

BOOKING_TIME = "2024-05-15T15:00:00"
"""`created_at` of every reservation booked during an episode (the benchmark's fixed "now")."""
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
CERTIFICATE_NUMBERS = (3221322, 3221323, 3221324)
INSURANCE_PER_PASSENGER = 30
BAG_FEE = 50
AIRPORTS: Mapping[str, str] = MappingProxyType(
    {
        "SFO": "San Francisco",
        "JFK": "New York",
        "LAX": "Los Angeles",
        "ORD": "Chicago",
        "DFW": "Dallas",
        "DEN": "Denver",
        "SEA": "Seattle",
        "ATL": "Atlanta",
        "MIA": "Miami",
        "BOS": "Boston",
        "PHX": "Phoenix",
        "IAH": "Houston",
        "LAS": "Las Vegas",
        "MCO": "Orlando",
        "EWR": "Newark",
        "CLT": "Charlotte",
        "MSP": "Minneapolis",
        "DTW": "Detroit",
        "PHL": "Philadelphia",
        "LGA": "LaGuardia",
    }
)


def _price_flight(db: AirlineDB, flight: dict[str, Any], cabin: str, passengers: Sized) -> str | None:
    """Fill `price`, `origin`, `destination` of a requested segment; an error string if it cannot be sold."""
    number = flight["flight_number"]
    if number not in db.flights:
        return f"Error: flight {number} not found"
    record = db.flights[number]
    if flight["date"] not in record["dates"]:
        return f"Error: flight {number} not found on date {flight['date']}"
    day = record["dates"][flight["date"]]
    if day["status"] != "available":
        return f"Error: flight {number} not available on date {flight['date']}"
    if day["available_seats"][cabin] < len(passengers):
        return f"Error: not enough seats on flight {number}"
    flight["price"] = day["prices"][cabin]
    flight["origin"] = record["origin"]
    flight["destination"] = record["destination"]
    return None


def book_reservation(
    db: AirlineDB,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: str,
    cabin: str,
    flights: list[dict[str, Any]],
    passengers: list[dict[str, Any]],
    payment_methods: list[dict[str, Any]],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: str,
) -> str:
    """Book a reservation, charging the listed payment methods."""
    if user_id not in db.users:
        return "Error: user not found"
    reservation_id = next((rid for rid in NEW_RESERVATION_IDS if rid not in db.reservations), NEW_RESERVATION_IDS[-1])
    reservation: dict[str, Any] = {
        "reservation_id": reservation_id,
        "user_id": user_id,
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": copy.deepcopy(flights),
        "passengers": passengers,
        "payment_history": payment_methods,
        "created_at": BOOKING_TIME,
        "total_baggages": total_baggages,
        "nonfree_baggages": nonfree_baggages,
        "insurance": insurance,
    }
    total_price = 0
    for flight in reservation["flights"]:
        error = _price_flight(db, flight, cabin, passengers)
        if error:
            return error
        total_price += flight["price"] * len(passengers)
    if insurance == "yes":
        total_price += INSURANCE_PER_PASSENGER * len(passengers)
    total_price += BAG_FEE * nonfree_baggages

    methods = db.users[user_id]["payment_methods"]
    for payment in payment_methods:
        payment_id, amount = payment["payment_id"], payment["amount"]
        if payment_id not in methods:
            return f"Error: payment method {payment_id} not found"
        if methods[payment_id]["source"] in ("gift_card", "certificate") and methods[payment_id]["amount"] < amount:
            return f"Error: not enough balance in payment method {payment_id}"
    paid = sum(payment["amount"] for payment in payment_methods)
    if paid != total_price:
        return f"Error: payment amount does not add up, total price is {total_price}, but paid {paid}"

    user = db.writable("users", user_id)
    methods = user["payment_methods"]
    for payment in payment_methods:
        payment_id, amount = payment["payment_id"], payment["amount"]
        if methods[payment_id]["source"] == "gift_card":
            methods[payment_id]["amount"] -= amount
        elif methods[payment_id]["source"] == "certificate":
            del methods[payment_id]
    db.reservations[reservation_id] = reservation
    user["reservations"].append(reservation_id)
    return json.dumps(reservation)


def calculate(db: AirlineDB, expression: str) -> str:
    """Evaluate an arithmetic expression (numbers, + - * /, parentheses), rounded to 2 decimals."""
    return _calculate(expression)


def cancel_reservation(db: AirlineDB, reservation_id: str) -> str:
    """Cancel a whole reservation: every payment is refunded to where it came from."""
    if reservation_id not in db.reservations:
        return "Error: reservation not found"
    reservation = db.writable("reservations", reservation_id)
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    return json.dumps(reservation)


def get_reservation_details(db: AirlineDB, reservation_id: str) -> str:
    """The reservation as JSON."""
    if reservation_id in db.reservations:
        return json.dumps(db.reservations[reservation_id])
    return "Error: user not found"


def get_user_details(db: AirlineDB, user_id: str) -> str:
    """The user profile as JSON."""
    if user_id in db.users:
        return json.dumps(db.users[user_id])
    return "Error: user not found"


def list_all_airports(db: AirlineDB) -> str:
    """Airport codes and their cities as JSON."""
    return json.dumps(dict(AIRPORTS))


def _listing(flight: dict[str, Any], day: dict[str, Any]) -> dict[str, Any]:
    """A flight without its calendar, with one day's status, seats and prices merged in."""
    listing = {k: v for k, v in flight.items() if k != "dates"}
    listing.update(day)
    return listing


def search_direct_flight(db: AirlineDB, origin: str, destination: str, date: str) -> str:
    """Bookable direct flights on a date, as a JSON list."""
    results = []
    for flight in db.flights.values():
        if (
            flight["origin"] == origin
            and flight["destination"] == destination
            and date in flight["dates"]
            and flight["dates"][date]["status"] == "available"
        ):
            results.append(_listing(flight, flight["dates"][date]))
    return json.dumps(results)


def search_onestop_flight(db: AirlineDB, origin: str, destination: str, date: str) -> str:
    """Bookable one-stop connections on a date, as a JSON list of `[first leg, second leg]`."""
    results = []
    for first in db.flights.values():
        if first["origin"] != origin:
            continue
        for second in db.flights.values():
            if second["destination"] != destination or first["destination"] != second["origin"]:
                continue
            # An overnight first leg ("+1" arrival) connects next day; upstream builds that date unpadded.
            second_date = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
            if first["scheduled_arrival_time_est"] > second["scheduled_departure_time_est"]:
                continue
            if (
                date in first["dates"]
                and second_date in second["dates"]
                and first["dates"][date]["status"] == "available"
                and second["dates"][second_date]["status"] == "available"
            ):
                leg1 = _listing(first, first["dates"][date])
                leg1["date"] = date
                leg2 = _listing(second, second["dates"][date])  # upstream reads the second leg on `date`
                leg2["date"] = second_date
                results.append([leg1, leg2])
    return json.dumps(results)


def send_certificate(db: AirlineDB, user_id: str, amount: int) -> str | None:
    """Add a travel certificate to a user's payment methods (at most three per episode)."""
    if user_id not in db.users:
        return "Error: user not found"
    for number in CERTIFICATE_NUMBERS:
        payment_id = f"certificate_{number}"
        if payment_id not in db.users[user_id]["payment_methods"]:
            user = db.writable("users", user_id)
            user["payment_methods"][payment_id] = {"source": "certificate", "amount": amount, "id": payment_id}
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    return None


def think(db: AirlineDB, thought: str) -> str:
    """Note a thought; changes nothing."""
    return ""


def transfer_to_human_agents(db: AirlineDB, summary: str) -> str:
    """Hand the conversation to a human agent; ends the episode."""
    return "Transfer successful"


def _update_payment(db: AirlineDB, user_id: str, payment_id: str, total_price: float) -> dict[str, Any] | str:
    """The payment method an update is charged to, or the error the tool returns (no certificates)."""
    if payment_id not in db.users[user_id]["payment_methods"]:
        return "Error: payment method not found"
    method: dict[str, Any] = db.users[user_id]["payment_methods"][payment_id]
    if method["source"] == "certificate":
        return "Error: certificate cannot be used to update reservation"
    if method["source"] == "gift_card" and method["amount"] < total_price:
        return "Error: gift card balance is not enough"
    return method


def update_reservation_baggages(
    db: AirlineDB, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
) -> str:
    """Set the checked bags of a reservation, charging 50 per added non-free bag."""
    if reservation_id not in db.reservations:
        return "Error: reservation not found"
    reservation = db.reservations[reservation_id]
    total_price = BAG_FEE * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    user_id = reservation["user_id"]
    method = _update_payment(db, user_id, payment_id, total_price)
    if isinstance(method, str):
        return method

    reservation = db.writable("reservations", reservation_id)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    if method["source"] == "gift_card":
        db.writable("users", user_id)["payment_methods"][payment_id]["amount"] -= total_price
    if total_price != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": total_price})
    return json.dumps(reservation)


def update_reservation_flights(
    db: AirlineDB, reservation_id: str, cabin: str, flights: list[dict[str, Any]], payment_id: str
) -> str:
    """Replace a reservation's flights and/or cabin; the price difference is charged or refunded."""
    if reservation_id not in db.reservations:
        return "Error: reservation not found"
    reservation = db.reservations[reservation_id]
    n_passengers = len(reservation["passengers"])
    total_price = 0
    flights = copy.deepcopy(flights)
    for flight in flights:
        # A segment the reservation already has, in the same cabin, keeps its booked price.
        kept = [
            f
            for f in reservation["flights"]
            if f["flight_number"] == flight["flight_number"]
            and f["date"] == flight["date"]
            and cabin == reservation["cabin"]
        ]
        if kept:
            total_price += kept[0]["price"] * n_passengers
            flight["price"] = kept[0]["price"]
            flight["origin"] = kept[0]["origin"]
            flight["destination"] = kept[0]["destination"]
            continue
        error = _price_flight(db, flight, cabin, reservation["passengers"])
        if error:
            return error
        total_price += flight["price"] * n_passengers
    total_price -= sum(flight["price"] for flight in reservation["flights"]) * n_passengers

    user_id = reservation["user_id"]
    method = _update_payment(db, user_id, payment_id, total_price)
    if isinstance(method, str):
        return method

    if method["source"] == "gift_card":
        db.writable("users", user_id)["payment_methods"][payment_id]["amount"] -= total_price
    reservation = db.writable("reservations", reservation_id)
    reservation["flights"] = flights
    if total_price != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": total_price})
    return json.dumps(reservation)


def update_reservation_passengers(db: AirlineDB, reservation_id: str, passengers: list[dict[str, Any]]) -> str:
    """Replace a reservation's passengers (the count cannot change)."""
    if reservation_id not in db.reservations:
        return "Error: reservation not found"
    if len(passengers) != len(db.reservations[reservation_id]["passengers"]):
        return "Error: number of passengers does not match"
    reservation = db.writable("reservations", reservation_id)
    reservation["passengers"] = passengers
    return json.dumps(reservation)


TOOLS: Mapping[str, ToolFunction] = MappingProxyType(
    {
        fn.__name__: fn
        for fn in (
            book_reservation,
            calculate,
            cancel_reservation,
            get_reservation_details,
            get_user_details,
            list_all_airports,
            search_direct_flight,
            search_onestop_flight,
            send_certificate,
            think,
            transfer_to_human_agents,
            update_reservation_baggages,
            update_reservation_flights,
            update_reservation_passengers,
        )
    }
)
"""Tool name -> function, in upstream's order."""
TERMINATING_TOOLS = frozenset({"transfer_to_human_agents"})
"""Calling one of these ends the episode."""
