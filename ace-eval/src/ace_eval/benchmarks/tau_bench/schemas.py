"""What the agent is told about each tool: a description and a JSON schema of its arguments.

The parameters, types and enums are upstream's; the wording is ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["TOOL_SPECS", "ToolSpec"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it."""

    description: str
    parameters: dict[str, object]


def _string(description: str) -> dict[str, object]:
    return {"type": "string", "description": description}


def _object(properties: dict[str, object], required: list[str] | None = None) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None else required}


_USER_ID = _string("A user id, e.g. 'sara_doe_496'.")
_RESERVATION_ID = _string("A reservation id of six characters, e.g. 'ZFA04Y'.")
_AIRPORT = "IATA airport code of three letters, e.g. '{}'."
_DATE = _string("Date as YYYY-MM-DD, e.g. '2024-05-01'.")
_CABIN = {"type": "string", "enum": ["basic_economy", "economy", "business"]}
_PAYMENT_ID = _string(
    "Id of a payment method in the user's profile, e.g. 'credit_card_7815826', 'gift_card_7815826' "
    "or 'certificate_7815826'."
)
_FLIGHTS = {
    "type": "array",
    "items": _object(
        {"flight_number": _string("Flight number, e.g. 'HAT001'."), "date": _string("Date as YYYY-MM-DD.")}
    ),
}
_PASSENGERS = {
    "type": "array",
    "description": "The passengers, each with first name, last name and date of birth.",
    "items": _object(
        {
            "first_name": _string("First name, e.g. 'Noah'."),
            "last_name": _string("Last name, e.g. 'Brown'."),
            "dob": _string("Date of birth as YYYY-MM-DD, e.g. '1990-01-01'."),
        }
    ),
}

TOOL_SPECS: Mapping[str, ToolSpec] = MappingProxyType(
    {
        "book_reservation": ToolSpec(
            "Book a new reservation for a user.",
            _object(
                {
                    "user_id": _USER_ID,
                    "origin": _string(_AIRPORT.format("SFO") + " Where the trip starts."),
                    "destination": _string(_AIRPORT.format("JFK") + " Where the trip goes."),
                    "flight_type": {"type": "string", "enum": ["one_way", "round_trip"]},
                    "cabin": _CABIN,
                    "flights": {**_FLIGHTS, "description": "Every flight segment of the trip."},
                    "passengers": _PASSENGERS,
                    "payment_methods": {
                        "type": "array",
                        "description": "How the total is paid: payment methods and the amount charged to each.",
                        "items": _object({"payment_id": _PAYMENT_ID, "amount": {"type": "number"}}),
                    },
                    "total_baggages": {"type": "integer", "description": "Checked bags in the reservation."},
                    "nonfree_baggages": {"type": "integer", "description": "How many of those bags are paid."},
                    "insurance": {"type": "string", "enum": ["yes", "no"]},
                }
            ),
        ),
        "calculate": ToolSpec(
            "Compute an arithmetic expression.",
            _object(
                {
                    "expression": _string(
                        "The expression, made of numbers, + - * /, parentheses and spaces, e.g. '2 + 2'."
                    )
                }
            ),
        ),
        "cancel_reservation": ToolSpec("Cancel a whole reservation.", _object({"reservation_id": _RESERVATION_ID})),
        "get_reservation_details": ToolSpec("Look up a reservation.", _object({"reservation_id": _RESERVATION_ID})),
        "get_user_details": ToolSpec("Look up a user's profile.", _object({"user_id": _USER_ID})),
        "list_all_airports": ToolSpec("List every airport code with its city.", _object({})),
        "search_direct_flight": ToolSpec(
            "Find direct flights between two airports on a date.",
            _object(
                {
                    "origin": _string(_AIRPORT.format("JFK")),
                    "destination": _string(_AIRPORT.format("LAX")),
                    "date": _DATE,
                }
            ),
        ),
        "search_onestop_flight": ToolSpec(
            "Find connections with one stop between two airports on a date.",
            _object(
                {
                    "origin": _string(_AIRPORT.format("JFK")),
                    "destination": _string(_AIRPORT.format("LAX")),
                    "date": _DATE,
                }
            ),
        ),
        "send_certificate": ToolSpec(
            "Give a user a travel certificate. Use with care.",
            _object({"user_id": _USER_ID, "amount": {"type": "number", "description": "Value of the certificate."}}),
        ),
        "think": ToolSpec(
            "Write down reasoning. Looks nothing up and changes nothing; use it for complex reasoning.",
            _object({"thought": _string("The reasoning.")}),
        ),
        "transfer_to_human_agents": ToolSpec(
            "Hand the user over to a human agent with a summary of the issue. Only when the user asks for a "
            "human, or when the request cannot be handled with the available tools.",
            _object({"summary": _string("Summary of the user's issue.")}),
        ),
        "update_reservation_baggages": ToolSpec(
            "Change the checked bags of a reservation.",
            _object(
                {
                    "reservation_id": _RESERVATION_ID,
                    "total_baggages": {"type": "integer", "description": "New number of checked bags."},
                    "nonfree_baggages": {"type": "integer", "description": "New number of paid checked bags."},
                    "payment_id": _PAYMENT_ID,
                }
            ),
        ),
        "update_reservation_flights": ToolSpec(
            "Change the flights and/or cabin of a reservation.",
            _object(
                {
                    "reservation_id": _RESERVATION_ID,
                    "cabin": _CABIN,
                    "flights": {
                        **_FLIGHTS,
                        "description": "ALL flight segments of the reservation after the change, unchanged ones too.",
                    },
                    "payment_id": _PAYMENT_ID,
                }
            ),
        ),
        "update_reservation_passengers": ToolSpec(
            "Change the passengers of a reservation.",
            _object({"reservation_id": _RESERVATION_ID, "passengers": _PASSENGERS}),
        ),
    }
)
"""Tool name -> spec, for every name of `tools.TOOLS`."""
