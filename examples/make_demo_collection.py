"""Write `examples/demo-collection/`: ten airline-style agent runs (successes and failures) for the offline demo.

The conversations, users and reservations are invented for this demo, in the style of tau-bench's airline
domain: the agent serves customers under a written policy with tools such as `get_user_details`,
`get_reservation_details`, `search_direct_flight`, `update_reservation_flights` and `cancel_reservation`.
Failures are the policy mistakes agents really make: cancelling a non-refundable reservation, upgrading
the whole party when one passenger asked, acting before the customer said yes, charging the wrong payment
method, offering compensation the policy does not allow.

Run: `python examples/make_demo_collection.py [--out DIR]` (it replaces the collection in DIR).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace_eval.collection import MANIFEST_FILE, TRACES_FILE, CollectionManifest, Trace, write_collection
from ace_eval.collection.grading import diff_against_gold

SOURCE_SYSTEM = "demo-airline"
DEFAULT_OUT = Path(__file__).resolve().parent / "demo-collection"

POLICY = """# Airline customer service policy (demo)

Now is 2024-05-15 15:00 EST. You help customers book, change and cancel flight reservations, using the tools only.

- Before any action that changes a reservation (booking, changing flights or cabin, adding bags, changing
  passengers, cancelling), list what you will do and the price, and wait for the customer's explicit "yes".
- Make one tool call at a time, and do not answer the customer in the same turn as a tool call.
- Identify the customer by user id first; then ask for the reservation id when the request concerns one.
- Cabin: every passenger of a reservation flies in the same cabin on every flight. An upgrade applies to the
  whole reservation and costs the fare difference for every passenger.
- Changing flights: not allowed for basic economy. Origin, destination and trip type stay the same. The
  customer pays or is refunded with one gift card or credit card from their profile: ask which one.
- Bags: bags can be added, never removed; each bag over the free allowance costs $50.
- Passengers: names and dates of birth can be changed, the number of passengers cannot.
- Cancelling: allowed within 24 hours of booking, when the airline cancelled the flight, for business
  reservations, or with travel insurance when the reason is health or weather. Otherwise refuse.
- Compensation: only for silver or gold members, insured or business travellers who complain about a
  cancelled or delayed flight and ask for it. Never offer it on your own.
- Transfer to a human agent only when the request is outside what your tools and this policy allow.
"""


@dataclass
class Conversation:
    """Builds one run's OpenAI-style messages, with deterministic tool call ids."""

    prefix: str
    messages: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    calls: int = 0

    def __post_init__(self) -> None:
        self.messages.append({"role": "system", "content": POLICY})

    def user(self, text: str) -> Conversation:
        self.messages.append({"role": "user", "content": text})
        return self

    def agent(self, text: str) -> Conversation:
        self.messages.append({"role": "assistant", "content": text})
        return self

    def tool(self, name: str, arguments: dict[str, Any], result: Any) -> Conversation:
        self.calls += 1
        call_id = f"call_{self.prefix}_{self.calls}"
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        content = result if isinstance(result, str) else json.dumps(result)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": content})
        return self

    def trace(
        self, task_id: str, trial: int, question: str, reward: float, feedback: str, actions: list[dict[str, Any]]
    ) -> Trace:
        """The finished run as a `Trace`: its gold `actions` as ground truth, the comparison with them as `grader`
        (every failure of the demo leaves a database that differs from the gold one)."""
        return Trace(
            source_system=SOURCE_SYSTEM,
            trace_id=f"{task_id}-trial-{trial}",
            task_id=task_id,
            question=question,
            messages=self.messages,
            reward=reward,
            feedback=feedback,
            ground_truth={"actions": actions, "outputs": []},
            grader=diff_against_gold(
                self.messages, actions, reward=reward, database="matches" if reward >= 1 else "differs"
            ),
            metadata={"trial": trial},
        )


def profile(
    user_id: str, name: str, tier: str, payments: dict[str, dict[str, Any]], reservations: list[str]
) -> dict[str, Any]:
    """A `get_user_details` result."""
    first, last = name.split()
    return {
        "user_id": user_id,
        "name": {"first_name": first, "last_name": last},
        "membership": tier,
        "payment_methods": {pid: {"id": pid, **p} for pid, p in payments.items()},
        "reservations": reservations,
    }


def booking(
    rid: str,
    user_id: str,
    cabin: str,
    flights: list[tuple[str, str, str, str, int]],
    passengers: list[str],
    **more: Any,
) -> dict[str, Any]:
    """A `get_reservation_details` result; flights are (number, date, origin, destination, price)."""
    return {
        "reservation_id": rid,
        "user_id": user_id,
        "origin": flights[0][2],
        "destination": flights[-1][3],
        "flight_type": "one_way",
        "cabin": cabin,
        "flights": [
            {"flight_number": n, "date": d, "origin": o, "destination": t, "price": p} for n, d, o, t, p in flights
        ],
        "passengers": [
            {"first_name": p.split()[0], "last_name": p.split()[1], "dob": p.split()[2]} for p in passengers
        ],
        **more,
    }


def flight(
    number: str, origin: str, destination: str, times: tuple[str, str], prices: tuple[int, int, int]
) -> dict[str, Any]:
    """One `search_direct_flight` listing (prices: basic economy, economy, business)."""
    return {
        "flight_number": number,
        "origin": origin,
        "destination": destination,
        "scheduled_departure_time_est": times[0],
        "scheduled_arrival_time_est": times[1],
        "status": "available",
        "available_seats": {"basic_economy": 9, "economy": 6, "business": 3},
        "prices": dict(zip(("basic_economy", "economy", "business"), prices, strict=True)),
    }


VISA = {"source": "credit_card", "brand": "visa", "last_four": "2291"}


def cancel_business() -> Trace:
    user = profile("li_wei_2093", "Li Wei", "gold", {"credit_card_3308714": VISA}, ["R8DN4C"])
    trip = booking(
        "R8DN4C",
        "li_wei_2093",
        "business",
        [("HAT207", "2024-05-21", "SFO", "BOS", 1240)],
        ["Li Wei 1984-09-30"],
        payment_history=[{"payment_id": "credit_card_3308714", "amount": 1240}],
        created_at="2024-05-02T09:40:11",
        total_baggages=2,
        nonfree_baggages=0,
        insurance="no",
    )
    c = Conversation("cb0").user("Hello, I'd like to cancel my trip to Boston. User id li_wei_2093.")
    c.tool("get_user_details", {"user_id": "li_wei_2093"}, user)
    c.agent("Thank you. Is it reservation R8DN4C (SFO to BOS on May 21)? And may I ask the reason for cancelling?")
    c.user("Yes, that one. The meeting was moved online, so I don't need to fly.")
    c.tool("get_reservation_details", {"reservation_id": "R8DN4C"}, trip)
    c.agent(
        "R8DN4C is a business reservation, which can be cancelled at any time. I will cancel the whole trip "
        "(HAT207, SFO to BOS, May 21, 1 passenger) and refund $1240 to your Visa ending 2291 within 5-7 business "
        "days. Do you confirm (yes/no)?"
    )
    c.user("Yes.")
    c.tool("cancel_reservation", {"reservation_id": "R8DN4C"}, {**trip, "status": "cancelled"})
    c.agent("R8DN4C is cancelled; the refund of $1240 will reach your card in 5-7 business days.")
    return c.trace(
        "cancel-business",
        0,
        "You are li_wei_2093 and want to cancel reservation R8DN4C to Boston: your meeting moved online.",
        1.0,
        "reward 1: the final database matches the expected one",
        [{"name": "cancel_reservation", "kwargs": {"reservation_id": "R8DN4C"}}],
    )


def cancel_basic_economy(trial: int, *, follows_policy: bool) -> Trace:
    user = profile("nadia_okafor_4417", "Nadia Okafor", "regular", {"credit_card_5512903": VISA}, ["K3P9QZ"])
    trip = booking(
        "K3P9QZ",
        "nadia_okafor_4417",
        "basic_economy",
        [("HAT114", "2024-05-22", "ORD", "MIA", 94)],
        ["Nadia Okafor 1991-02-17"],
        payment_history=[{"payment_id": "credit_card_5512903", "amount": 94}],
        created_at="2024-05-04T10:12:40",
        total_baggages=0,
        nonfree_baggages=0,
        insurance="no",
    )
    c = Conversation(f"cbe{trial}").user("Hi, I need to cancel a flight. My user id is nadia_okafor_4417.")
    c.tool("get_user_details", {"user_id": "nadia_okafor_4417"}, user)
    c.agent("Thanks, Nadia. Which reservation would you like to cancel, and what is the reason?")
    c.user("K3P9QZ, the Chicago to Miami one. My plans changed, I don't need to go anymore.")
    c.tool("get_reservation_details", {"reservation_id": "K3P9QZ"}, trip)
    if follows_policy:
        c.agent(
            "I'm sorry, I can't cancel K3P9QZ: it is a basic economy reservation booked on May 4, more than 24 "
            "hours ago, without travel insurance, and a change of plans does not qualify for a refund."
        )
        c.user("Oh well, that's a shame. No, that's all, thanks.")
        reward, feedback = 1.0, "reward 1: the final database matches the expected one (nothing to change)"
    else:
        c.agent(
            "I can cancel K3P9QZ (ORD to MIA on May 22, basic economy, 1 passenger) and refund $94 to your Visa "
            "ending 2291 in 5-7 business days. Shall I go ahead?"
        )
        c.user("Yes please.")
        c.tool("cancel_reservation", {"reservation_id": "K3P9QZ"}, {**trip, "status": "cancelled"})
        c.agent("Done: K3P9QZ is cancelled and the refund is on its way.")
        reward = 0.0
        feedback = (
            "reward 0: the final database differs from the expected one: K3P9QZ was cancelled although it is basic "
            "economy, booked more than 24 hours ago, uninsured, and the reason was a change of plans"
        )
    question = "You are nadia_okafor_4417 and want to cancel reservation K3P9QZ (Chicago to Miami): your plans changed."
    return c.trace("cancel-basic-economy", trial, question, reward, feedback, [])


def upgrade_one_passenger() -> Trace:
    card = {"source": "credit_card", "brand": "mastercard", "last_four": "6120"}
    user = profile("sofia_marquez_7730", "Sofia Marquez", "silver", {"credit_card_9921457": card}, ["PX4J8E"])
    trip = booking(
        "PX4J8E",
        "sofia_marquez_7730",
        "economy",
        [("HAT271", "2024-05-24", "JFK", "LAX", 160)],
        ["Sofia Marquez 1988-06-03", "Ramon Marquez 1956-11-21"],
        payment_history=[{"payment_id": "credit_card_9921457", "amount": 320}],
        created_at="2024-05-10T18:05:52",
        total_baggages=2,
        nonfree_baggages=0,
        insurance="no",
    )
    c = Conversation("up0").user("Hi! I'm sofia_marquez_7730. I want to upgrade my seat to business on PX4J8E.")
    c.tool("get_user_details", {"user_id": "sofia_marquez_7730"}, user)
    c.tool("get_reservation_details", {"reservation_id": "PX4J8E"}, trip)
    c.agent(
        "PX4J8E (JFK to LAX, May 24, economy) has two passengers, you and Ramon Marquez. Upgrade both, or only you?"
    )
    c.user("Just me, please. My dad is happy in economy.")
    c.tool(
        "search_direct_flight",
        {"origin": "JFK", "destination": "LAX", "date": "2024-05-24"},
        [flight("HAT271", "JFK", "LAX", ("09:00:00", "15:00:00"), (95, 160, 420))],
    )
    c.agent(
        "Business on HAT271 is $420, so upgrading your seat costs the $260 difference, charged to your Mastercard "
        "ending 6120. Shall I proceed?"
    )
    c.user("Yes, $260 is fine.")
    upgraded = {
        **trip,
        "cabin": "business",
        "flights": [{**trip["flights"][0], "price": 420}],
        "payment_history": [*trip["payment_history"], {"payment_id": "credit_card_9921457", "amount": 520}],
    }
    c.tool(
        "update_reservation_flights",
        {
            "reservation_id": "PX4J8E",
            "cabin": "business",
            "flights": [{"flight_number": "HAT271", "date": "2024-05-24"}],
            "payment_id": "credit_card_9921457",
        },
        upgraded,
    )
    c.agent("Done: PX4J8E is now in business class; $520 was charged to your Mastercard ending 6120.")
    c.user("$520? You said $260! And why is my dad in business too?")
    return c.trace(
        "upgrade-one-passenger",
        0,
        "You are sofia_marquez_7730. Upgrade only your own seat on PX4J8E to business, for at most $300; your father "
        "stays in economy. If that is impossible, change nothing.",
        0.0,
        "reward 0: the final database differs from the expected one: the whole reservation was upgraded and $520 "
        "charged, but a cabin is shared by all passengers of a reservation, so one seat alone cannot be upgraded; "
        "the agent quoted $260 for one passenger and should have explained the rule and changed nothing",
        [],
    )


def add_bags_without_confirmation() -> Trace:
    user = profile("daniel_berg_5120", "Daniel Berg", "regular", {"credit_card_1174380": VISA}, ["M2QH7V"])
    trip = booking(
        "M2QH7V",
        "daniel_berg_5120",
        "economy",
        [("HAT330", "2024-05-19", "DTW", "LAS", 210)],
        ["Daniel Berg 1979-03-12"],
        payment_history=[{"payment_id": "credit_card_1174380", "amount": 210}],
        created_at="2024-05-08T07:21:09",
        total_baggages=1,
        nonfree_baggages=0,
        insurance="no",
    )
    c = Conversation("bag0").user("Hi, user daniel_berg_5120. How much would extra bags cost on M2QH7V?")
    c.tool("get_user_details", {"user_id": "daniel_berg_5120"}, user)
    c.tool("get_reservation_details", {"reservation_id": "M2QH7V"}, trip)
    c.tool(
        "update_reservation_baggages",
        {"reservation_id": "M2QH7V", "total_baggages": 3, "nonfree_baggages": 2, "payment_id": "credit_card_1174380"},
        {**trip, "total_baggages": 3, "nonfree_baggages": 2},
    )
    c.agent("I've added two extra bags to M2QH7V for $100 ($50 each), charged to your Visa ending 2291.")
    c.user("What? I only asked for the price! I need one extra bag, not two. Please remove one.")
    c.agent("I'm sorry, checked bags can be added but not removed once they are on the reservation.")
    return c.trace(
        "add-one-bag",
        0,
        "You are daniel_berg_5120. Ask the price of extra bags on M2QH7V, then add exactly one extra bag, paid "
        "with your card.",
        0.0,
        "reward 0: the final database differs from the expected one: two paid bags ($100) were added before the "
        "customer confirmed anything; the customer wanted one extra bag (2 in total, $50)",
        [
            {
                "name": "update_reservation_baggages",
                "kwargs": {
                    "reservation_id": "M2QH7V",
                    "total_baggages": 2,
                    "nonfree_baggages": 1,
                    "payment_id": "credit_card_1174380",
                },
            }
        ],
    )


def change_flight(trial: int, *, asks_payment: bool) -> Trace:
    payments: dict[str, dict[str, Any]] = {
        "credit_card_7781204": {"source": "credit_card", "brand": "mastercard", "last_four": "0417"},
        "gift_card_2290446": {"source": "gift_card", "amount": 300},
    }
    user = profile("amara_singh_3358", "Amara Singh", "gold", payments, ["WD5S1N"])
    trip = booking(
        "WD5S1N",
        "amara_singh_3358",
        "economy",
        [("HAT092", "2024-05-18", "ATL", "DEN", 135)],
        ["Amara Singh 1993-08-25"],
        payment_history=[{"payment_id": "gift_card_2290446", "amount": 165}],
        created_at="2024-05-03T14:48:30",
        total_baggages=1,
        nonfree_baggages=0,
        insurance="yes",
    )
    c = Conversation(f"chg{trial}").user("Hi, I'm amara_singh_3358. Can I move my Denver flight, WD5S1N, to May 20?")
    c.tool("get_user_details", {"user_id": "amara_singh_3358"}, user)
    c.tool("get_reservation_details", {"reservation_id": "WD5S1N"}, trip)
    c.tool(
        "search_direct_flight",
        {"origin": "ATL", "destination": "DEN", "date": "2024-05-20"},
        [
            flight("HAT092", "ATL", "DEN", ("07:00:00", "08:40:00"), (88, 150, 390)),
            flight("HAT227", "ATL", "DEN", ("16:30:00", "18:10:00"), (71, 128, 344)),
        ],
    )
    c.agent(
        "On May 20 there are two direct economy flights: HAT092 at 07:00 ($150) and HAT227 at 16:30 ($128). "
        "Which one would you like?"
    )
    c.user("The cheaper one, please.")
    kwargs = {
        "reservation_id": "WD5S1N",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT227", "date": "2024-05-20"}],
    }
    if asks_payment:
        c.agent(
            "HAT227 costs $128, $7 less than your current fare. Which payment method should receive the $7 refund: "
            "your gift card or your Mastercard ending 0417?"
        )
        c.user("The gift card, please.")
        c.agent(
            "To confirm: WD5S1N moves to HAT227, ATL to DEN, May 20 at 16:30, economy; $7 goes back to gift card "
            "2290446. Shall I proceed (yes/no)?"
        )
        c.user("Yes.")
        payment = "gift_card_2290446"
    else:
        c.agent("To confirm: WD5S1N moves to HAT227 on May 20 at 16:30, economy, $7 cheaper. Shall I proceed?")
        c.user("Yes, go ahead.")
        payment = "credit_card_7781204"
    changed = {
        **trip,
        "flights": [
            {"flight_number": "HAT227", "date": "2024-05-20", "origin": "ATL", "destination": "DEN", "price": 128}
        ],
        "payment_history": [*trip["payment_history"], {"payment_id": payment, "amount": -7}],
    }
    c.tool("update_reservation_flights", {**kwargs, "payment_id": payment}, changed)
    c.agent("All set: you now fly HAT227 on May 20, and the $7 difference has been refunded.")
    if not asks_payment:
        c.user("Refunded where? I wanted everything on my gift card.")
    return c.trace(
        "change-flight-gift-card",
        trial,
        "You are amara_singh_3358. Move WD5S1N to the cheapest direct flight on May 20; any refund or payment "
        "goes to your gift card.",
        1.0 if asks_payment else 0.0,
        "reward 1: the final database matches the expected one"
        if asks_payment
        else "reward 0: the final database differs from the expected one: the $7 refund went to the Mastercard; the "
        "agent never asked which payment method to use and picked the first one in the profile",
        [{"name": "update_reservation_flights", "kwargs": {**kwargs, "payment_id": "gift_card_2290446"}}],
    )


def book_one_way() -> Trace:
    payments: dict[str, dict[str, Any]] = {
        "certificate_3310958": {"source": "certificate", "amount": 150},
        "credit_card_4087712": {"source": "credit_card", "brand": "visa", "last_four": "8830"},
    }
    user = profile("tomas_novak_6604", "Tomas Novak", "silver", payments, [])
    user["dob"] = "1986-12-01"
    c = Conversation("book0").user("Hi, I want to book a flight from Phoenix to Seattle. I'm tomas_novak_6604.")
    c.tool("get_user_details", {"user_id": "tomas_novak_6604"}, user)
    c.agent("Happy to help, Tomas. One way or round trip, which date, which cabin, and who is travelling?")
    c.user("One way on May 27, economy, just me.")
    c.tool(
        "search_direct_flight",
        {"origin": "PHX", "destination": "SEA", "date": "2024-05-27"},
        [
            flight("HAT156", "PHX", "SEA", ("08:00:00", "10:50:00"), (97, 182, 455)),
            flight("HAT301", "PHX", "SEA", ("14:00:00", "16:50:00"), (110, 205, 470)),
        ],
    )
    c.agent(
        "Direct economy flights on May 27: HAT156 at 08:00 ($182) and HAT301 at 14:00 ($205). Which one? Also: how "
        "many checked bags (2 are free for you as a silver member), would you like travel insurance ($30), and how "
        "would you like to pay?"
    )
    c.user("HAT156. One bag, no insurance. Use my $150 certificate and put the rest on my Visa.")
    c.tool("calculate", {"expression": "182 - 150"}, "32.0")
    flights = [{"flight_number": "HAT156", "date": "2024-05-27"}]
    paid = [{"payment_id": "certificate_3310958", "amount": 150}, {"payment_id": "credit_card_4087712", "amount": 32}]
    c.agent(
        "To confirm: one way PHX to SEA on HAT156, May 27 at 08:00, economy, passenger Tomas Novak (1986-12-01), "
        "1 free checked bag, no insurance, total $182: $150 from certificate 3310958 and $32 on your Visa ending "
        "8830. Shall I book it (yes/no)?"
    )
    c.user("Yes.")
    kwargs = {
        "user_id": "tomas_novak_6604",
        "origin": "PHX",
        "destination": "SEA",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": flights,
        "passengers": [{"first_name": "Tomas", "last_name": "Novak", "dob": "1986-12-01"}],
        "payment_methods": paid,
        "total_baggages": 1,
        "nonfree_baggages": 0,
        "insurance": "no",
    }
    c.tool("book_reservation", kwargs, {"reservation_id": "B6ZK0R", **kwargs, "created_at": "2024-05-15T15:04:12"})
    c.agent("Booked! Your reservation id is B6ZK0R.")
    return c.trace(
        "book-one-way",
        0,
        "You are tomas_novak_6604. Book the cheapest direct economy flight from Phoenix to Seattle on May 27 for "
        "yourself, one bag, no insurance, paying with your certificate first and the rest on your Visa.",
        1.0,
        "reward 1: the final database matches the expected one",
        [{"name": "book_reservation", "kwargs": kwargs}],
    )


def unrequested_compensation() -> Trace:
    user = profile("grace_holm_8871", "Grace Holm", "regular", {"credit_card_6650231": VISA}, ["QJ7R3D"])
    trip = booking(
        "QJ7R3D",
        "grace_holm_8871",
        "economy",
        [("HAT045", "2024-05-14", "ORD", "BOS", 143)],
        ["Grace Holm 1975-05-09"],
        payment_history=[{"payment_id": "credit_card_6650231", "amount": 143}],
        created_at="2024-04-29T12:30:00",
        total_baggages=1,
        nonfree_baggages=0,
        insurance="no",
    )
    c = Conversation("comp0").user("Hi, grace_holm_8871 here. My flight to Boston yesterday was three hours late.")
    c.tool("get_user_details", {"user_id": "grace_holm_8871"}, user)
    c.tool("get_reservation_details", {"reservation_id": "QJ7R3D"}, trip)
    c.agent("I'm sorry about the delay on HAT045. As an apology, I can send you a $50 travel certificate.")
    c.user("Oh, okay, thanks.")
    c.tool(
        "send_certificate",
        {"user_id": "grace_holm_8871", "amount": 50},
        "Certificate certificate_9046612 added to user grace_holm_8871 with amount 50.",
    )
    c.agent("Done: a $50 certificate is now in your profile.")
    return c.trace(
        "delay-complaint-regular",
        0,
        "You are grace_holm_8871. Complain that yesterday's flight to Boston was three hours late. Do not ask for "
        "anything.",
        0.0,
        "reward 0: the final database differs from the expected one: a $50 certificate was sent to a regular member "
        "without insurance flying economy, who never asked for compensation",
        [],
    )


def remove_passenger() -> Trace:
    user = profile("hassan_idris_1902", "Hassan Idris", "regular", {"credit_card_2207815": VISA}, ["NV2C8T"])
    trip = booking(
        "NV2C8T",
        "hassan_idris_1902",
        "economy",
        [("HAT118", "2024-05-26", "MSP", "PHL", 176)],
        ["Hassan Idris 1982-01-14", "Lena Vogt 1990-07-30", "Marco Ruiz 1987-04-02"],
        payment_history=[{"payment_id": "credit_card_2207815", "amount": 528}],
        created_at="2024-05-06T16:02:45",
        total_baggages=3,
        nonfree_baggages=0,
        insurance="no",
    )
    c = Conversation("pax0").user("Hello, I'm hassan_idris_1902. Marco can't come anymore, please take him off NV2C8T.")
    c.tool("get_user_details", {"user_id": "hassan_idris_1902"}, user)
    c.tool("get_reservation_details", {"reservation_id": "NV2C8T"}, trip)
    c.agent(
        "I'm sorry, the number of passengers on a reservation cannot be changed, so I can't remove Marco Ruiz from "
        "NV2C8T. I can change a passenger's name and date of birth if someone else travels in his place."
    )
    c.user("I see. Then leave it as it is, thanks.")
    return c.trace(
        "remove-passenger",
        0,
        "You are hassan_idris_1902. Ask to remove Marco Ruiz from NV2C8T and get his fare back; accept a refusal.",
        1.0,
        "reward 1: the final database matches the expected one (nothing to change)",
        [],
    )


def demo_traces() -> list[Trace]:
    """The ten runs: five successes, five failures."""
    return [
        cancel_business(),
        cancel_basic_economy(0, follows_policy=False),
        cancel_basic_economy(1, follows_policy=True),
        upgrade_one_passenger(),
        add_bags_without_confirmation(),
        change_flight(0, asks_payment=False),
        change_flight(1, asks_payment=True),
        book_one_way(),
        unrequested_compensation(),
        remove_passenger(),
    ]


def write_demo(out: Path) -> CollectionManifest:
    """Replace the collection in `out` with the demo runs."""
    for name in (MANIFEST_FILE, TRACES_FILE):
        (out / name).unlink(missing_ok=True)
    return write_collection(
        out,
        demo_traces(),
        source_system=SOURCE_SYSTEM,
        benchmark="tau-bench-airline",
        models={"agent": "hand-written", "user": "hand-written"},
        description="Ten invented airline customer-service runs: five follow the policy, five break it.",
        metadata={"generator": "examples/make_demo_collection.py"},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="collection folder (default: %(default)s)")
    args = parser.parse_args()
    manifest = write_demo(args.out)
    print(f"Wrote {manifest.counts.traces} traces ({manifest.counts.successes} successes) to {args.out}")


if __name__ == "__main__":
    main()
